package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

func cmdStatus(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("status", g, errw, "status [--stream s] [--watch] [--redraw d]")
	stream := fs.String("stream", config.DefaultStream, "stream")
	watch := fs.Bool("watch", false, "follow changes: redraw the table in place on a terminal, append tables otherwise (Ctrl-C stops); while the hub is unreachable a line above the table says since when and the error of the last retry (with --output json: on stderr)")
	interval := fs.Duration("redraw", 200*time.Millisecond, "with --watch: the shortest time between two redraws")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("status: unexpected argument %q", pos[0])
	}
	if err := checkOutput(g); err != nil {
		return err
	}
	// The watch's reconnects are otherwise silent: a table redrawn from
	// the last state looks healthy while the hub is down.
	view := newStatusView()
	changed := make(chan struct{}, 1)
	state := hubclient.WithWatchState(func(err error) {
		if view.connection(err, time.Now()) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	c, closeConn, err := dial(g, state, hubclient.WithWatchBackoff(100*time.Millisecond, maxReconnectWait))
	if err != nil {
		return err
	}
	defer closeConn()
	if !*watch {
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		var md metadata.MD
		st, err := c.Hub.GetStatus(rctx, &confighubv1.GetStatusRequest{Stream: *stream}, grpc.Header(&md))
		if err != nil {
			return &cliError{"status", err}
		}
		if g.output == "json" {
			return printJSON(out, st)
		}
		text := renderStatus(st, time.Now(), 0)
		// The hub names its status page when it serves one.
		if u := md.Get(hubclient.StatusPageHeader); len(u) > 0 && u[0] != "" {
			text += "status page: " + u[0] + "\n"
		}
		_, err = io.WriteString(out, text)
		return err
	}
	if g.output == "json" {
		// One event per line, as the hub sends them; the outages go to
		// stderr, one line at each start and end.
		line := protojson.MarshalOptions{}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			errc <- c.Watch(wctx, *stream, 0, func(ev *confighubv1.WatchStatusResponse) error {
				b, err := line.Marshal(ev)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(out, string(b))
				return err
			})
		}()
		down := false
		for {
			select {
			case err := <-errc:
				return watchEnd(ctx, err)
			case <-changed:
				o := view.outage()
				switch {
				case o != nil && !down:
					fmt.Fprintf(errw, "confighubctl: status: %s\n", o.notice(false))
				case o == nil && down:
					fmt.Fprintf(errw, "confighubctl: status: hub reachable again at %s\n", time.Now().Format(time.TimeOnly))
				}
				down = o != nil // the state the lines above told of
			}
		}
	}
	r := &watchRenderer{w: out, ansi: isTerminal(out), width: terminalWidth(out)}
	dirty := make(chan struct{}, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Watch(wctx, *stream, 0, func(ev *confighubv1.WatchStatusResponse) error {
			view.apply(ev)
			select {
			case dirty <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	// Redraw when something changed (at most every interval), and every
	// second on a terminal so the AGE column moves.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case err := <-errc:
			if view.seen() {
				r.draw(view.render(time.Now(), r.width))
			}
			return watchEnd(ctx, err)
		case <-tick.C:
			if r.ansi && view.seen() {
				r.draw(view.render(time.Now(), r.width))
			}
		case <-changed:
			// An outage's start, a new error or its end draws a frame at
			// once, also when no table came yet (the hub down from the
			// start).
			r.draw(view.render(time.Now(), r.width))
		case <-dirty:
			if wait := *interval - time.Since(last); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					cancel()
					continue
				}
			}
			last = time.Now()
			r.draw(view.render(last, r.width))
		}
	}
}

// watchEnd turns the end of a watch into the command's result: Ctrl-C is
// a normal end.
func watchEnd(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return nil
	}
	if err != nil {
		return &cliError{"status", err}
	}
	return nil
}

// statusView is the watcher's picture of one stream, built from events,
// and of the watch's connection.
type statusView struct {
	mu   sync.Mutex
	fold *hubclient.StatusView
	down *outage // nil while the watch is connected
}

// outage is a broken watch: since when, and the error of its last retry.
type outage struct {
	since time.Time
	err   error
}

// notice is the line status --watch shows while the hub is unreachable,
// above the table (which stopped following the hub) when there is one.
func (o *outage) notice(aboveTable bool) string {
	note := ""
	if aboveTable {
		note = " (the table below is as of then)"
	}
	return fmt.Sprintf("hub unreachable since %s, retrying%s: %s", o.since.Format(time.TimeOnly), note, oneLine(o.err))
}

func newStatusView() *statusView { return &statusView{fold: hubclient.NewStatusView(0, nil)} }

func (v *statusView) seen() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fold.Ready() || v.down != nil
}

// connection records what hubclient.WithWatchState reports at now: err
// when the watch broke or a retry failed, nil when it is connected again.
// It says whether the notice changed.
func (v *statusView) connection(err error, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
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

// outage is the current outage, nil while connected.
func (v *statusView) outage() *outage {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.down == nil {
		return nil
	}
	o := *v.down
	return &o
}

// apply folds one event into the view.
func (v *statusView) apply(ev *confighubv1.WatchStatusResponse) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fold.Apply(ev)
}

// render is the notice of an outage, if any, above the table, if any.
func (v *statusView) render(now time.Time, width int) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var text string
	if v.down != nil {
		text = cutLines(v.down.notice(v.fold.Ready())+"\n", width)
	}
	if v.fold.Ready() {
		text += renderStatus(v.fold.Status(), now, width)
	}
	return text
}

// renderStatus is the status table. width > 0 cuts every line to it (a
// redrawn table must not wrap).
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
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SINK\tKIND\tSTATE\tGENERATION\tATTEMPTS\tAGE\tLAST ERROR")
	for _, s := range sinks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\n",
			s.GetSink(), s.GetKind(), stateName(s), s.GetAppliedGeneration(), s.GetDesiredGeneration(),
			s.GetAttempts(), age(s, now), lastError(s, now))
	}
	if len(sinks) == 0 {
		fmt.Fprintln(tw, "(no sinks)")
	}
	_ = tw.Flush()
	for _, s := range sinks {
		writeExcluded(&b, s)
	}
	writeDataPlanes(&b, sinks, now)
	return cutLines(b.String(), width)
}

// cutLines cuts every line of text to width (none when width <= 0).
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

// writeExcluded lists the entities a DEGRADED sink's fallback leaves out,
// one a line, named as the controller's objects when they carry k8s-* tags.
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

// k8sObject names the Kubernetes object of KIC's k8s-* tags: "Ingress
// default/echo"; "" without them.
func k8sObject(tags []string) string {
	var kind, ns, name string
	for _, t := range tags {
		switch {
		case strings.HasPrefix(t, "k8s-kind:"):
			kind = strings.TrimPrefix(t, "k8s-kind:")
		case strings.HasPrefix(t, "k8s-namespace:"):
			ns = strings.TrimPrefix(t, "k8s-namespace:")
		case strings.HasPrefix(t, "k8s-name:"):
			name = strings.TrimPrefix(t, "k8s-name:")
		}
	}
	if name == "" {
		return ""
	}
	if ns != "" {
		name = ns + "/" + name
	}
	return strings.TrimSpace(kind + " " + name)
}

// age is the time since the sink last applied a configuration.
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
			// First, so a table cut to the terminal width still shows it.
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

// watchRenderer draws successive frames: on a terminal each frame replaces
// the previous one in place (cursor up over the old frame, clear to the end
// of the screen); otherwise frames are appended, each under a time stamp.
type watchRenderer struct {
	w     io.Writer
	ansi  bool
	width int
	prev  int // lines of the frame on screen
	now   func() time.Time
}

func (r *watchRenderer) draw(frame string) {
	if frame == "" && !r.ansi {
		return // an appended frame of nothing says nothing
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
		now := time.Now
		if r.now != nil {
			now = r.now
		}
		if r.prev > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "--- %s\n", now().Format(time.RFC3339))
		b.WriteString(frame)
		r.prev++
	}
	_, _ = io.WriteString(r.w, b.String())
}
