package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

func statusCmd(fs *flag.FlagSet) func(*invocation, []string) error {
	stream := fs.String("stream", config.DefaultStream, "stream")
	watch := fs.Bool("watch", false, "follow changes: redraw the table in place on a terminal, append tables otherwise (Ctrl-C stops); while the hub is unreachable a line above the table says since when and the error of the last retry (with --output json: on stderr)")
	interval := fs.Duration("redraw", 200*time.Millisecond, "with --watch: the shortest time between two redraws")
	return func(x *invocation, _ []string) error {
		if *watch {
			return watchStatus(x, *stream, *interval)
		}
		var md metadata.MD
		st, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.GetStatusResponse, error) {
			return c.Hub.GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: *stream}, grpc.Header(&md))
		})
		if err != nil {
			return err
		}
		return x.print(st, func() string {
			text := renderStatus(st, time.Now(), 0)
			if u := md.Get(hubclient.StatusPageHeader); len(u) > 0 && u[0] != "" {
				text += "status page: " + u[0] + "\n"
			}
			return text
		})
	}
}

// watchStatus follows a stream: a table redrawn as sinks apply (and every
// second on a terminal), or JSON events; an outage is a notice above it.
func watchStatus(x *invocation, stream string, interval time.Duration) error {
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	events, states := make(chan *confighubv1.WatchStatusResponse), make(chan error)
	c, err := x.client(hubclient.WithWatchBackoff(100*time.Millisecond, maxReconnectWait),
		hubclient.WithWatchState(func(err error) { _ = send(ctx, states, err) }))
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		errc <- c.Watch(ctx, stream, 0, func(ev *confighubv1.WatchStatusResponse) error { return send(ctx, events, ev) })
	}()
	asJSON := x.g.output == "json"
	v := newStatusView()
	r := &watchRenderer{w: x.out, now: time.Now}
	r.ansi, r.width = terminal(x.out)
	var last time.Time
	dirty := false
	draw := func() {
		last, dirty = time.Now(), false
		r.draw(v.render(last, r.width))
	}
	tick := time.NewTicker(max(interval, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			if !asJSON && v.seen() {
				draw()
			}
			if x.ctx.Err() != nil || err == nil || errors.Is(err, context.Canceled) {
				return nil // Ctrl-C is a normal end
			}
			return &cliError{"status", err}
		case ev := <-events:
			if asJSON {
				b, err := protojson.Marshal(ev)
				if err == nil {
					_, err = fmt.Fprintln(x.out, string(b))
				}
				if err != nil {
					return &cliError{"status", err}
				}
				continue
			}
			v.fold.Apply(ev)
			if dirty = true; time.Since(last) >= interval {
				draw()
			}
		case err := <-states:
			was := v.down != nil
			switch {
			case !v.connection(err, time.Now()):
			case !asJSON:
				draw()
			case v.down != nil && !was:
				fmt.Fprintf(x.errw, "confighubctl: status: %s\n", v.down.notice(false))
			case v.down == nil:
				fmt.Fprintf(x.errw, "confighubctl: status: hub reachable again at %s\n", time.Now().Format(time.TimeOnly))
			}
		case now := <-tick.C:
			if dirty || r.ansi && v.seen() && now.Sub(last) >= time.Second {
				draw()
			}
		}
	}
}

func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type statusView struct {
	fold *hubclient.StatusView
	down *outage // nil while the watch is connected
}

// outage is a broken watch: since when, and the error of its last retry.
type outage struct {
	since time.Time
	err   error
}

// notice is the line shown while the hub is unreachable.
func (o *outage) notice(aboveTable bool) string {
	note := ""
	if aboveTable {
		note = " (the table below is as of then)"
	}
	return fmt.Sprintf("hub unreachable since %s, retrying%s: %s", o.since.Format(time.TimeOnly), note, oneLine(o.err))
}

func newStatusView() *statusView { return &statusView{fold: hubclient.NewStatusView(0, nil)} }

func (v *statusView) seen() bool { return v.fold.Ready() || v.down != nil }

// connection records what WithWatchState reports; true when the notice changed.
func (v *statusView) connection(err error, now time.Time) bool {
	switch {
	case err == nil:
		was := v.down != nil
		v.down = nil
		return was
	case v.down == nil:
		v.down = &outage{since: now, err: err}
		return true
	}
	same := oneLine(v.down.err) == oneLine(err)
	v.down.err = err
	return !same
}

// render is the notice of an outage, if any, above the table, if any.
func (v *statusView) render(now time.Time, width int) string {
	var text string
	if v.down != nil {
		text = cutLines(v.down.notice(v.fold.Ready())+"\n", width)
	}
	if v.fold.Ready() {
		text += renderStatus(v.fold.Status(), now, width)
	}
	return text
}

// renderStatus is the status table, every line cut to width > 0.
func renderStatus(st *confighubv1.GetStatusResponse, now time.Time, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stream %s  generation %d", st.GetStream(), st.GetGeneration())
	if st.GetHash() != "" {
		fmt.Fprintf(&b, " (%s)", short(st.GetHash()))
	}
	for _, gs := range st.GetGenerations() {
		if gs.GetGeneration() != st.GetGeneration() {
			continue
		}
		fmt.Fprintf(&b, "  applied by %d/%d sinks", gs.GetSinksApplied(), gs.GetSinksTotal())
		if ct := gs.GetConvergeTime(); ct != nil && gs.GetAcceptTime() != nil {
			fmt.Fprintf(&b, ", converged in %s", roundDur(ct.AsTime().Sub(gs.GetAcceptTime().AsTime())))
		}
	}
	b.WriteString("\n")
	sinks := append([]*confighubv1.SinkStatus(nil), st.GetSinks()...)
	sort.Slice(sinks, func(i, j int) bool { return sinks[i].GetSink() < sinks[j].GetSink() })
	b.WriteString(table("SINK\tKIND\tSTATE\tGENERATION\tATTEMPTS\tAGE\tLAST ERROR", len(sinks), func(i int) []any {
		s := sinks[i]
		return []any{s.GetSink(), s.GetKind(), stateName(s), fmt.Sprintf("%d/%d", s.GetAppliedGeneration(), s.GetDesiredGeneration()),
			s.GetAttempts(), age(s, now), lastError(s, now)}
	}))
	if len(sinks) == 0 {
		b.WriteString("(no sinks)\n")
	}
	for _, s := range sinks {
		writeExcluded(&b, s)
	}
	writeDataPlanes(&b, sinks, now)
	return cutLines(b.String(), width)
}

func cutLines(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\n")
		if utf8.RuneCountInString(l) >= width {
			r := []rune(l)
			l = string(r[:width-2]) + "…"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n") + "\n"
}

func stateName(s *confighubv1.SinkStatus) string {
	name := strings.TrimPrefix(s.GetState().String(), "SINK_STATE_")
	if s.GetState() == confighubv1.SinkState_SINK_STATE_DEGRADED {
		return fmt.Sprintf("%s (%d excluded)", name, len(s.GetExcludedEntities()))
	}
	if s.GetReason() != "" && (s.GetState() == confighubv1.SinkState_SINK_STATE_WAITING || s.GetState() == confighubv1.SinkState_SINK_STATE_SKIPPED) {
		name += " (" + s.GetReason() + ")"
	}
	return name
}

// writeExcluded lists the entities a DEGRADED sink's fallback leaves out.
func writeExcluded(b *strings.Builder, s *confighubv1.SinkStatus) {
	ex := s.GetExcludedEntities()
	if len(ex) == 0 {
		return
	}
	fmt.Fprintf(b, "%s runs a fallback of generation %d (%s) without %d entities:\n", s.GetSink(), s.GetFallbackGeneration(), short(s.GetFallbackHash()), len(ex))
	for _, x := range ex {
		name := x.GetEntityName()
		if name == "" {
			name = x.GetEntityId()
		}
		line := x.GetEntityType() + " " + name
		if obj := k8sObject(x.GetEntityTags()); obj != "" {
			line += " (" + obj + ")"
		}
		switch {
		case x.GetMessage() != "":
			line += ": " + x.GetMessage()
		case x.GetDependsOn() != "":
			line += ": depends on " + x.GetDependsOn()
		}
		if x.GetPreviousVersionKept() {
			line += " [previous version kept]"
		}
		b.WriteString("  " + strings.Join(strings.Fields(line), " ") + "\n")
	}
}

// k8sObject names the object of KIC's k8s-* tags: "Ingress default/echo".
func k8sObject(tags []string) string {
	kind, _ := hubclient.Tag(tags, "k8s-kind")
	ns, _ := hubclient.Tag(tags, "k8s-namespace")
	name, _ := hubclient.Tag(tags, "k8s-name")
	if name == "" {
		return ""
	}
	if ns != "" {
		name = ns + "/" + name
	}
	return strings.TrimSpace(kind + " " + name)
}

func age(s *confighubv1.SinkStatus, now time.Time) string {
	t := s.GetLastAppliedTime()
	if t == nil {
		return "-"
	}
	return roundDur(now.Sub(t.AsTime()))
}

func lastError(s *confighubv1.SinkStatus, now time.Time) string {
	msg := strings.Join(strings.Fields(s.GetLastError()), " ")
	if msg == "" {
		return ""
	}
	if n := len(s.GetEntityErrors()); n > 0 {
		msg = fmt.Sprintf("%s [%d entity errors]", msg, n)
	}
	if nr := s.GetNextRetryTime(); nr != nil && s.GetState() == confighubv1.SinkState_SINK_STATE_BACKOFF {
		if d := nr.AsTime().Sub(now); d > 0 {
			msg = fmt.Sprintf("[retry in %s] %s", roundDur(d), msg)
		}
	}
	return msg
}

func roundDur(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < 48*time.Hour:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// watchRenderer draws frames in place on a terminal, else appended under time stamps.
type watchRenderer struct {
	w     io.Writer
	ansi  bool
	width int
	prev  int // lines of the frame on screen
	now   func() time.Time
}

func (r *watchRenderer) draw(frame string) {
	if frame == "" && !r.ansi {
		return
	}
	var b strings.Builder
	if r.ansi {
		if r.prev > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", r.prev)
		}
		b.WriteString("\x1b[J")
		b.WriteString(frame)
		r.prev = strings.Count(frame, "\n")
	} else {
		if r.prev > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "--- %s\n", r.now().Format(time.RFC3339))
		b.WriteString(frame)
		r.prev++
	}
	_, _ = io.WriteString(r.w, b.String())
}

func writeDataPlanes(b *strings.Builder, sinks []*confighubv1.SinkStatus, now time.Time) {
	var dps []*confighubv1.SinkStatus
	for _, s := range sinks {
		if s.GetDataPlane() != nil {
			dps = append(dps, s)
		}
	}
	if len(dps) == 0 {
		return
	}
	b.WriteString("data planes:\n")
	text := table("  SINK\tHOSTNAME\tVERSION\tADDRESS\tCONNECTION\tLAST PING\tRUNS\tSYNC\tLABELS", len(dps), func(i int) []any {
		dp := dps[i].GetDataPlane()
		conn := "disconnected"
		if t := dp.GetDisconnectedSince(); !dp.GetConnected() && t != nil {
			conn += " " + roundDur(now.Sub(t.AsTime())) + " ago"
		}
		if t := dp.GetConnectedSince(); dp.GetConnected() && t != nil {
			conn = "connected " + roundDur(now.Sub(t.AsTime()))
		}
		ping := "-"
		if t := dp.GetLastPing(); t != nil {
			ping = roundDur(now.Sub(t.AsTime())) + " ago"
		}
		labels := make([]string, 0, len(dp.GetLabels()))
		for k, v := range dp.GetLabels() {
			labels = append(labels, k+":"+v)
		}
		sort.Strings(labels)
		return []any{"  " + dps[i].GetSink(), dash(dp.GetHostname()), dash(dp.GetVersion()), dash(dp.GetAddress()), conn, ping,
			dash(short(dp.GetConfigHash())), dash(dp.GetSyncStatus()), dash(strings.Join(labels, ","))}
	})
	b.WriteString(text)
}
