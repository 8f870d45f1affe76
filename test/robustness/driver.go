package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/kongemu"
)

// Options shape one run of the fleet.
type Options struct {
	Seed     uint64
	Duration time.Duration // the faulty part; the settle comes after it
	// HubBin is the shipped hub binary; Dir holds its data dir and sinks
	// file.
	HubBin string
	Dir    string
	// Streams, GatewaysPerStream, Pushers and WatchersPerStream size the
	// fleet (0: 2, 2, 3, 2).
	Streams, GatewaysPerStream, Pushers, WatchersPerStream int
	// KillEvery is the mean time between two kill -9 of the hub (0: no
	// kills, only the one before the final check).
	KillEvery time.Duration
	// Etcd, when set, runs the hub as Replicas replicas (0: 2) on it
	// (--store etcd); the killer then also kills a replica or restarts
	// etcd.
	Etcd     Etcd
	Replicas int
	// FaultEvery is the mean time between two gateway faults (0: 300ms).
	FaultEvery time.Duration
	// PushPause is each pusher's mean pause between two pushes (0: 35ms).
	PushPause time.Duration
	Log       func(format string, args ...any)
}

// Etcd is the etcd server replicas share (test/etcdtest's Process).
type Etcd interface {
	Endpoints() []string
	Restart()
}

// Stats counts what a run did, for its report.
type Stats struct {
	mu       sync.Mutex
	Ops      map[string]int // "unary ok", "upload FailedPrecondition", ...
	Faults   map[string]int
	Kills    int
	Etcd     int            // etcd restarts
	Sessions map[string]int // watch sessions by how they began
}

func (s *Stats) add(m *map[string]int, k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

// String is one line per kind of count.
func (s *Stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := func(m map[string]int) string {
		var parts []string
		for _, k := range sortedKeys(m) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprintf("operations: %s\nfaults: %s\nkills: %d (kill -9 and restart of a hub), etcd restarts: %d\nwatch sessions: %s",
		line(s.Ops), line(s.Faults), s.Kills, s.Etcd, line(s.Sessions))
}

// Fleet is the hub child process, its emulated gateways, pushers, watchers,
// the fault injector and the killer, recording a History.
type Fleet struct {
	o       Options
	hubs    []*hubProc // one, or the replicas
	metrics []string
	conns   []*grpc.ClientConn
	hubcs   []confighubv1.ConfigHubServiceClient
	cache   *kongemu.Cache
	gws     []*gateway
	streams []string

	mu       sync.Mutex
	h        History
	contents int
	watchers []*watcher

	Stats Stats
}

// NewFleet starts the gateways and the hub (a sink per gateway, from a
// sinks file put at every start).
func NewFleet(ctx context.Context, o Options) (*Fleet, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Streams, 2)
	def(&o.GatewaysPerStream, 2)
	def(&o.Pushers, 3)
	def(&o.WatchersPerStream, 2)
	if o.FaultEvery == 0 {
		o.FaultEvery = 300 * time.Millisecond
	}
	if o.PushPause == 0 {
		o.PushPause = 35 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	f := &Fleet{o: o, cache: kongemu.NewCache()}
	f.h.Loads = map[string][]Load{}
	f.h.GatewayStream = map[string]string{}
	var sinks strings.Builder
	for s := range o.Streams {
		stream := fmt.Sprintf("s%d", s)
		f.streams = append(f.streams, stream)
		for g := range o.GatewaysPerStream {
			gw, err := startGateway(fmt.Sprintf("gw-%s-%d", stream, g), stream, f.cache)
			if err != nil {
				f.Close()
				return nil, err
			}
			f.gws = append(f.gws, gw)
			f.h.GatewayStream[gw.name] = stream
			fmt.Fprintf(&sinks, "- name: %s\n  stream: %s\n  kong:\n    address: %s\n    status_interval: 1s\n"+
				"  options:\n    timeout: 2s\n    backoff: {initial: 100ms, max: 1s}\n", gw.name, stream, gw.url)
		}
	}
	sinksFile := filepath.Join(o.Dir, "sinks.yaml")
	if err := os.WriteFile(sinksFile, []byte(sinks.String()), 0o600); err != nil {
		f.Close()
		return nil, err
	}
	n := 1
	if o.Etcd != nil {
		n = max(o.Replicas, 2)
	}
	for i := range n {
		addr, err := freePort()
		if err != nil {
			f.Close()
			return nil, err
		}
		metrics, err := freePort()
		if err != nil {
			f.Close()
			return nil, err
		}
		args := []string{"--listen", addr, "--metrics-listen", metrics, "--sinks", sinksFile,
			"--data-dir", filepath.Join(o.Dir, fmt.Sprintf("data-%d", i))}
		if o.Etcd != nil {
			args = append(args, "--store", "etcd", "--etcd-endpoints", strings.Join(o.Etcd.Endpoints(), ","),
				"--etcd-prefix", "/robustness", "--replica-id", fmt.Sprintf("r%d", i), "--lease-ttl", "2s")
		}
		h := &hubProc{bin: o.HubBin, args: args}
		f.hubs, f.metrics = append(f.hubs, h), append(f.metrics, metrics)
		if err := h.start(ctx); err != nil {
			f.Close()
			return nil, err
		}
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			f.Close()
			return nil, err
		}
		f.conns = append(f.conns, conn)
		f.hubcs = append(f.hubcs, confighubv1.NewConfigHubServiceClient(conn))
	}
	return f, nil
}

// HubPID is the running hub's process id; MetricsURL its /metrics.
// (of the first replica).
func (f *Fleet) HubPID() int        { return f.hubs[0].pid() }
func (f *Fleet) MetricsURL() string { return "http://" + f.metrics[0] + "/metrics" }

// Output is the last lines every hub printed.
func (f *Fleet) Output() string {
	var b strings.Builder
	for i, h := range f.hubs {
		fmt.Fprintf(&b, "--- hub %d\n%s\n", i, h.output())
	}
	return b.String()
}

// Close stops everything the fleet started.
func (f *Fleet) Close() {
	for _, c := range f.conns {
		_ = c.Close()
	}
	for _, h := range f.hubs {
		h.kill()
	}
	for _, g := range f.gws {
		g.close()
	}
}

// newContent is a configuration with a fresh marker: valid, or (invalid)
// one the hub accepts and every gateway rejects with 400 (a service
// without a host).
func (f *Fleet) newContent(rng *rand.Rand, invalid bool) (string, []byte) {
	f.mu.Lock()
	f.contents++
	id := fmt.Sprintf("c%d", f.contents)
	f.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, `{"_format_version":"3.0","services":[`)
	n := 1 + rng.IntN(20)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		host := fmt.Sprintf(`"host":"backend-%d.default.svc",`, i)
		if invalid && i == 0 {
			host = ""
		}
		fmt.Fprintf(&b, `{"name":"rb-%s-%d",%s"port":80,"tags":["k8s-name:svc-%d"],"routes":[{"name":"rb-%s-%d-r","paths":["/p%d"]}]}`, id, i, host, i, id, i, i)
	}
	b.WriteString("]}")
	return id, []byte(b.String())
}

// push sends one configuration and records it.
func (f *Fleet) push(ctx context.Context, pusher int, rng *rand.Rand, stream, content string, body []byte, expected uint64) Push {
	p := Push{Pusher: pusher, Stream: stream, Content: content, Hash: config.Hash(body), Expected: expected, Kind: PushUnary}
	if rng.IntN(2) == 0 {
		p.Kind = PushUpload
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	i := rng.IntN(len(f.hubcs))
	p.Call = time.Now()
	var res *confighubv1.PushConfigResponse
	var err error
	if p.Kind == PushUnary {
		res, err = f.hubcs[i].PushConfig(ctx, &confighubv1.PushConfigRequest{Stream: stream, Config: body, ExpectedGeneration: expected})
	} else {
		c := hubclient.New(f.conns[i], hubclient.WithUnaryLimit(0), hubclient.WithChunkBytes(1024))
		res, err = c.Push(ctx, hubclient.Push{Stream: stream, Config: body, ExpectedGeneration: expected})
	}
	p.Return = time.Now()
	p.Code = status.Code(err)
	if err != nil {
		p.Err = err.Error()
	} else {
		p.Gen, p.AckHash, p.Unchanged = res.GetGeneration(), res.GetHash(), res.GetUnchanged()
	}
	f.mu.Lock()
	f.h.Pushes = append(f.h.Pushes, p)
	f.mu.Unlock()
	f.Stats.add(&f.Stats.Ops, fmt.Sprintf("%s-%s", p.Kind, p.Code))
	return p
}

// pusher pushes until ctx ends: mostly new configurations (one in ten
// rejected by the gateways), sometimes the last one again (unchanged), a
// third with expected_generation set to the last generation it saw.
func (f *Fleet) pusher(ctx context.Context, id int, rng *rand.Rand) {
	lastGen := map[string]uint64{}
	type pushed struct {
		content string
		body    []byte
	}
	last := map[string]pushed{}
	for ctx.Err() == nil {
		stream := f.streams[rng.IntN(len(f.streams))]
		var content string
		var body []byte
		if lp, ok := last[stream]; ok && rng.IntN(10) == 0 {
			content, body = lp.content, lp.body
		} else {
			content, body = f.newContent(rng, rng.IntN(10) == 0)
		}
		var expected uint64
		if rng.IntN(3) == 0 {
			expected = lastGen[stream]
		}
		p := f.push(ctx, id, rng, stream, content, body, expected)
		if p.Acked() {
			lastGen[stream] = p.Gen
			last[stream] = pushed{content, body}
		}
		pause(ctx, time.Duration(rng.Int64N(int64(2*f.o.PushPause))))
	}
}

// pause waits d or until ctx ends (the driver's own pacing).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// faults injects a random gateway fault every FaultEvery on average.
func (f *Fleet) faults(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		pause(ctx, time.Duration(rng.Int64N(int64(2*f.o.FaultEvery))))
		if ctx.Err() != nil {
			return
		}
		g := f.gws[rng.IntN(len(f.gws))]
		kind := []string{"hang", "429", "500", "400", "drop", "slow", "restart"}[rng.IntN(7)]
		switch kind {
		case "hang":
			g.emu.Hang()
			time.AfterFunc(time.Duration(500+rng.IntN(2500))*time.Millisecond, g.emu.Release)
		case "429":
			g.emu.ScriptConfig(kongemu.Step{Status: 429, RetryAfter: "1"})
		case "500":
			g.emu.ScriptConfig(kongemu.Step{Status: 500})
		case "400":
			g.emu.ScriptConfig(kongemu.Step{Status: 400})
		case "drop":
			g.emu.DropNext(1)
		case "slow":
			g.emu.SetLatency(time.Duration(100+rng.IntN(2400)) * time.Millisecond)
			time.AfterFunc(time.Duration(1000+rng.IntN(2000))*time.Millisecond, func() { g.emu.SetLatency(0) })
		case "restart":
			g.emu.Restart()
		}
		f.Stats.add(&f.Stats.Faults, kind)
	}
}

// restart kills hub i with SIGKILL, starts it again on the same data
// dir and records what it serves for every stream.
func (f *Fleet) restart(ctx context.Context, i int) error {
	killed := time.Now()
	f.hubs[i].kill()
	f.Stats.mu.Lock()
	f.Stats.Kills++
	f.Stats.mu.Unlock()
	if err := f.hubs[i].start(ctx); err != nil {
		return err
	}
	return f.observeAll(ctx, i, killed)
}

// restartEtcd restarts the etcd server the replicas share and records
// what replica 0 serves afterwards.
func (f *Fleet) restartEtcd(ctx context.Context) error {
	stopped := time.Now()
	f.o.Etcd.Restart()
	f.Stats.mu.Lock()
	f.Stats.Etcd++
	f.Stats.mu.Unlock()
	return f.observeAll(ctx, 0, stopped)
}

func (f *Fleet) observeAll(ctx context.Context, i int, killed time.Time) error {
	rs := Restart{Killed: killed, Streams: map[string]Observation{}}
	for _, s := range f.streams {
		o, err := f.observe(ctx, i, s)
		if err != nil {
			return fmt.Errorf("read stream %q after the restart: %w", s, err)
		}
		rs.Streams[s] = o
	}
	f.mu.Lock()
	f.h.Restarts = append(f.h.Restarts, rs)
	f.mu.Unlock()
	return nil
}

// observe reads a stream's current generation and recent generations from
// hub i, retrying (bounded) while it is not ready.
func (f *Fleet) observe(ctx context.Context, i int, stream string) (Observation, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		o, err := f.observeOnce(ctx, i, stream)
		if status.Code(err) != codes.Unavailable || ctx.Err() != nil {
			return o, err
		}
		pause(ctx, 100*time.Millisecond)
	}
}

func (f *Fleet) observeOnce(ctx context.Context, i int, stream string) (Observation, error) {
	cur, err := f.hubcs[i].GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: stream}, grpc.WaitForReady(true))
	if status.Code(err) == codes.NotFound {
		return Observation{}, nil // the checker says whether it had to be there
	}
	if err != nil {
		return Observation{}, err
	}
	o := Observation{Gen: cur.GetGeneration(), Hash: cur.GetHash(), Generations: map[uint64]string{}}
	st, err := f.hubcs[i].GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: stream}, grpc.WaitForReady(true))
	if status.Code(err) == codes.NotFound {
		// A restarted replica's status view may not hold the stream yet;
		// its configuration (above) is what durability reads.
		f.Stats.add(&f.Stats.Ops, "status-NotFound-after-restart")
		return o, nil
	}
	if err != nil {
		return Observation{}, err
	}
	for _, g := range st.GetGenerations() {
		o.Generations[g.GetGeneration()] = g.GetHash()
	}
	return o, nil
}

func (f *Fleet) killer(ctx context.Context, rng *rand.Rand) error {
	for ctx.Err() == nil {
		pause(ctx, f.o.KillEvery/2+time.Duration(rng.Int64N(int64(f.o.KillEvery))))
		if ctx.Err() != nil {
			return nil
		}
		var err error
		switch i := rng.IntN(len(f.hubs) + 1); {
		case len(f.hubs) == 1:
			err = f.restart(context.WithoutCancel(ctx), 0)
		case i == len(f.hubs):
			err = f.restartEtcd(context.WithoutCancel(ctx))
		default:
			err = f.restart(context.WithoutCancel(ctx), i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Run drives the faulty mix for Duration, then settles the fleet (faults
// cleared, a last kill -9 and restart, one last push per stream, every
// sink done) and returns the recorded history.
func (f *Fleet) Run(ctx context.Context) (*History, error) {
	master := rand.New(rand.NewPCG(f.o.Seed, f.o.Seed^0x9e3779b97f4a7c15))
	sub := func() *rand.Rand { return rand.New(rand.NewPCG(master.Uint64(), master.Uint64())) }
	mix, stop := context.WithTimeout(ctx, f.o.Duration)
	defer stop()
	var wg sync.WaitGroup
	var killErr error
	for i := range f.o.Pushers {
		rng := sub()
		wg.Go(func() { f.pusher(mix, i+1, rng) })
	}
	wctx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	var wwg sync.WaitGroup
	for _, s := range f.streams {
		for range f.o.WatchersPerStream {
			w := &watcher{f: f, id: len(f.watchers) + 1, stream: s, rng: sub()}
			f.watchers = append(f.watchers, w)
			wwg.Go(func() { w.run(wctx) })
		}
	}
	frng := sub()
	wg.Go(func() { f.faults(mix, frng) })
	if f.o.KillEvery > 0 {
		krng := sub()
		wg.Go(func() { killErr = f.killer(mix, krng) })
	}
	wg.Wait()
	if killErr != nil {
		return nil, killErr
	}
	f.o.Log("mix done: settling (faults cleared, a last kill -9 and restart, a last push per stream)")
	return f.settle(ctx, sub(), stopWatchers, &wwg)
}

func (f *Fleet) settle(ctx context.Context, rng *rand.Rand, stopWatchers func(), wwg *sync.WaitGroup) (*History, error) {
	for _, g := range f.gws {
		g.emu.ClearFaults()
	}
	for i := range f.hubs {
		if err := f.restart(ctx, i); err != nil {
			return nil, err
		}
	}
	lastGen := map[string]uint64{}
	for _, s := range f.streams {
		content, body := f.newContent(rng, rng.IntN(4) == 0)
		for try := 0; ; try++ {
			p := f.push(ctx, 0, rng, s, content, body, 0)
			if p.Acked() {
				lastGen[s] = p.Gen
				break
			}
			if try == 5 {
				return nil, fmt.Errorf("the last push to %q: %s", s, p.Err)
			}
		}
	}
	f.h.FinalStatus = map[string]*confighubv1.GetStatusResponse{}
	deadline := time.Now().Add(60 * time.Second)
	for _, s := range f.streams {
		for {
			st, err := f.hubcs[0].GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: s})
			if err != nil {
				return nil, err
			}
			f.h.FinalStatus[s] = st
			if settled(st, lastGen[s]) || time.Now().After(deadline) {
				break
			}
			pause(ctx, 100*time.Millisecond)
		}
	}
	f.h.FinalGateways = map[string]GatewayFinal{}
	for _, g := range f.gws {
		f.h.FinalGateways[g.name] = g.final()
		f.h.Loads[g.name] = g.recorded()
	}
	// Every watcher resumes once more and must agree with GetStatus.
	stopWatchers()
	wwg.Wait()
	f.h.FinalWatchers = map[int]WatcherFinal{}
	for _, w := range f.watchers {
		fin, err := w.final(ctx)
		if err != nil {
			return nil, err
		}
		f.h.FinalWatchers[w.id] = fin
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.h
	return &h, nil
}

// settled: the stream is at gen and every sink is done with it.
func settled(st *confighubv1.GetStatusResponse, gen uint64) bool {
	if st.GetGeneration() != gen {
		return false
	}
	for _, s := range st.GetSinks() {
		if s.GetDesiredGeneration() != st.GetGeneration() {
			return false
		}
		switch s.GetState() {
		case confighubv1.SinkState_SINK_STATE_APPLIED, confighubv1.SinkState_SINK_STATE_FAILED:
		default:
			return false
		}
	}
	return len(st.GetSinks()) > 0
}

// watcher follows one stream's status, disconnecting at random and
// resuming from the last revision it saw.
type watcher struct {
	f      *Fleet
	id     int
	stream string
	rng    *rand.Rand

	mu   sync.Mutex
	rev  uint64
	view *view
	hub  int // the replica of the current session
}

// session is one WatchStatus call, recorded as it went; it ends when ctx
// does or the stream breaks.
func (w *watcher) session(ctx context.Context) error {
	w.mu.Lock()
	sess := WatchSession{Watcher: w.id, Stream: w.stream, From: w.rev}
	w.hub = w.rng.IntN(len(w.f.hubcs))
	hub := w.f.hubcs[w.hub]
	w.mu.Unlock()
	defer func() {
		sess.End = time.Now()
		w.f.mu.Lock()
		w.f.h.Watches = append(w.f.h.Watches, sess)
		w.f.mu.Unlock()
	}()
	st, err := hub.WatchStatus(ctx, &confighubv1.WatchStatusRequest{Stream: w.stream, FromRevision: sess.From})
	if err != nil {
		return err
	}
	for {
		ev, err := st.Recv()
		if err != nil {
			return err
		}
		if len(sess.Events) == 0 {
			how := "resumed"
			if ev.GetSnapshot() != nil {
				how = "snapshot-" + ev.GetSnapshotReason()
			}
			w.f.Stats.add(&w.f.Stats.Sessions, how)
		}
		sess.Events = append(sess.Events, ev)
		w.mu.Lock()
		if ev.GetSnapshot() != nil {
			w.view = &view{}
		}
		if w.view != nil {
			w.view.apply(ev)
		}
		if ev.GetRevision() > w.rev || ev.GetSnapshot() != nil {
			w.rev = ev.GetRevision()
		}
		w.mu.Unlock()
	}
}

func (w *watcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, time.Duration(300+w.rng.IntN(2700))*time.Millisecond)
		_ = w.session(sctx)
		cancel()
		pause(ctx, time.Duration(20+w.rng.IntN(200))*time.Millisecond)
	}
}

// final resumes once more and waits (bounded) until the watcher's view
// equals GetStatus; the checker judges the last pair either way.
func (w *watcher) final(ctx context.Context) (WatcherFinal, error) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.session(sctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		w.mu.Lock()
		hub := w.f.hubcs[w.hub]
		w.mu.Unlock()
		st, err := hub.GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: w.stream})
		if err != nil {
			return WatcherFinal{}, err
		}
		w.mu.Lock()
		agree := w.view != nil && w.view.diff(st) == ""
		w.mu.Unlock()
		if agree || time.Now().After(deadline) {
			return WatcherFinal{Stream: w.stream, Status: st}, nil
		}
		pause(ctx, 50*time.Millisecond)
	}
}
