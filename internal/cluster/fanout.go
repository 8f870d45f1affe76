package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// Defaults of the Fanout's options.
const (
	DefaultStatusInterval = 100 * time.Millisecond
	DefaultOpTimeout      = 5 * time.Second
	DefaultProbeInterval  = time.Second
	keepGenerations       = 16
)

var _ hub.Fanout = (*Fanout)(nil)

// Fanout is the hub.Fanout of a replica: it wraps the local engine, runs
// workers only for the sinks this replica owns, and serves every sink's
// status from etcd. See the package doc for its guarantees.
type Fanout struct {
	eng     hub.Fanout
	st      store.Store
	watcher store.Watcher
	cli     *clientv3.Client
	mem     *Membership
	prefix  string
	clock   clockwork.Clock
	log     *slog.Logger

	statusEvery time.Duration
	opTimeout   time.Duration
	probeEvery  time.Duration
	onReady     func(bool)
	watchBuffer int

	// admin serialises reassign (engine PutSink/DeleteSink of owned sinks).
	admin sync.Mutex

	mu      sync.Mutex
	specs   map[string]*confighubv1.Sink
	running map[string]*confighubv1.Sink
	seed    map[string]store.Applied
	gens    map[string][]genInfo
	// fresh are sinks just created (put, not yet through a reassign): they
	// have no applied record, so starting them needs no read of the store.
	fresh    map[string]bool
	ready    bool
	stopping bool
	owned    string // last logged ownership, to log changes only

	writer *statusWriter
	mirror *mirror

	// base ends when Run returns; status watchers end with it, and Run
	// waits for their goroutines (watchers, once watchClosed is set).
	base        context.Context
	baseCancel  context.CancelFunc
	watchWG     sync.WaitGroup
	watchClosed bool
}

type genInfo struct {
	gen    uint64
	hash   string
	accept time.Time
	labels map[string]string
}

// Option configures a Fanout.
type Option func(*Fanout)

// WithClock sets the clock of the status coalescing and the probes.
func WithClock(c clockwork.Clock) Option { return func(f *Fanout) { f.clock = c } }

// WithLogger sets the logger.
//
// Lines do not name the replica: give a logger that does once
// (cmd/confighub adds replica=ID to every line of a replica).
func WithLogger(l *slog.Logger) Option { return func(f *Fanout) { f.log = l } }

// WithStatusInterval sets how often an owner writes its sinks' changed
// statuses to etcd (coalesced: the latest status of each sink wins).
func WithStatusInterval(d time.Duration) Option {
	return func(f *Fanout) {
		if d > 0 {
			f.statusEvery = d
		}
	}
}

// WithOpTimeout bounds each etcd call the Fanout makes.
func WithOpTimeout(d time.Duration) Option {
	return func(f *Fanout) {
		if d > 0 {
			f.opTimeout = d
		}
	}
}

// WithProbeInterval sets how often etcd's reachability is checked.
func WithProbeInterval(d time.Duration) Option {
	return func(f *Fanout) {
		if d > 0 {
			f.probeEvery = d
		}
	}
}

// WithReadiness sets the function told when etcd becomes reachable (true)
// or unreachable (false); the command points it at the gRPC health status.
func WithReadiness(fn func(ready bool)) Option { return func(f *Fanout) { f.onReady = fn } }

// WithWatchBuffer sets each status watcher's channel capacity.
func WithWatchBuffer(n int) Option {
	return func(f *Fanout) {
		if n > 1 {
			f.watchBuffer = n
		}
	}
}

// New returns the Fanout of the replica whose membership is mem, around the
// local engine eng. st is the shared (etcd) store and w follows its changes;
// cli is the etcd client of the status keys under prefix. Run starts it.
func New(eng hub.Fanout, st store.Store, w store.Watcher, cli *clientv3.Client, mem *Membership, prefix string, opts ...Option) *Fanout {
	f := &Fanout{
		eng: eng, st: st, watcher: w, cli: cli, mem: mem, prefix: strings.TrimSuffix(prefix, "/"),
		clock: clockwork.NewRealClock(), log: slog.New(slog.DiscardHandler),
		statusEvery: DefaultStatusInterval, opTimeout: DefaultOpTimeout, probeEvery: DefaultProbeInterval,
		onReady: func(bool) {}, watchBuffer: 1024,
		specs: map[string]*confighubv1.Sink{}, running: map[string]*confighubv1.Sink{},
		seed: map[string]store.Applied{}, gens: map[string][]genInfo{}, fresh: map[string]bool{}, ready: true,
	}
	for _, o := range opts {
		o(f)
	}
	f.base, f.baseCancel = context.WithCancel(context.Background())
	f.writer = newStatusWriter(f)
	f.mirror = newMirror(f)
	return f
}

func (f *Fanout) statusPrefix() string         { return f.prefix + "/status/" }
func (f *Fanout) statusKey(sink string) string { return f.statusPrefix() + sink }

// Run follows the store, the membership and the status keys, and writes the
// owned sinks' statuses, until ctx ends. Then it stops the owned workers and
// leaves the membership (revoking the lease, so the others take over at
// once).
func (f *Fanout) Run(ctx context.Context) {
	var wg sync.WaitGroup
	mctx, mcancel := context.WithCancel(context.WithoutCancel(ctx))
	wg.Go(func() { f.mem.Run(mctx) })
	wg.Go(func() { f.followStore(ctx) })
	wg.Go(func() { f.followMembers(ctx) })
	wg.Go(func() { f.writer.run(ctx) })
	wg.Go(func() { f.mirror.run(ctx) })
	wg.Go(func() { f.probe(ctx) })
	<-ctx.Done()
	f.baseCancel()
	f.mu.Lock()
	f.stopping = true // reassign then stops every worker
	f.mu.Unlock()
	f.reassign(context.WithoutCancel(ctx))
	mcancel()
	wg.Wait()
	f.mu.Lock()
	f.watchClosed = true
	f.mu.Unlock()
	f.watchWG.Wait()
}

func (f *Fanout) baseCtx() context.Context { return f.base }

// Ready says whether etcd answered the last probe.
func (f *Fanout) Ready() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready
}

// probe checks etcd with a linearizable read (it needs a quorum) and tells
// onReady about every change.
func (f *Fanout) probe(ctx context.Context) {
	for {
		tctx, cancel := context.WithTimeout(ctx, min(f.opTimeout, f.probeEvery*2))
		_, err := f.cli.Get(tctx, f.mem.Key(), clientv3.WithCountOnly())
		cancel()
		if ctx.Err() != nil {
			return
		}
		ok := err == nil
		f.mu.Lock()
		changed := ok != f.ready
		f.ready = ok
		f.mu.Unlock()
		if changed {
			if ok {
				f.log.Info("cluster: etcd reachable again; serving")
			} else {
				f.log.Warn("cluster: etcd unreachable; not serving", "error", err)
			}
			f.onReady(ok)
		}
		select {
		case <-ctx.Done():
			return
		case <-f.clock.After(f.probeEvery):
		}
	}
}

// followMembers reassigns the sinks at every membership change.
func (f *Fanout) followMembers(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.mem.Changes():
			f.reassign(ctx)
		}
	}
}

// followStore applies the store's changes made by any replica: new
// generations go to the local engine, sink specs to the partition.
func (f *Fanout) followStore(ctx context.Context) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		ch := f.watcher.Watch(wctx)
		// List after the watch started: the events that follow are applied
		// on top of the listing, so none is missed.
		if err := f.resync(ctx); err != nil {
			cancel()
			f.log.Warn("cluster: reading the store failed; retrying", "error", err)
			if !f.wait(ctx) {
				return
			}
			continue
		}
		for ev := range ch {
			f.apply(ctx, ev)
		}
		cancel()
		if ctx.Err() == nil {
			f.log.Warn("cluster: store watch ended; watching again")
			if !f.wait(ctx) {
				return
			}
		}
	}
}

func (f *Fanout) wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-f.clock.After(f.probeEvery):
		return true
	}
}

func (f *Fanout) resync(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, f.opTimeout)
	defer cancel()
	streams, err := f.st.ListStreams(tctx)
	if err != nil {
		return fmt.Errorf("list streams: %w", err)
	}
	sinks, err := f.st.ListSinks(tctx)
	if err != nil {
		return fmt.Errorf("list sinks: %w", err)
	}
	for _, s := range streams {
		f.Publish(config.New(s.Name, s.Generation, s.Hash, s.Format, s.Config, nil, s.Labels, s.AcceptTime))
	}
	next := map[string]*confighubv1.Sink{}
	for _, s := range sinks {
		next[s.GetName()] = f.normalise(s)
	}
	f.mu.Lock()
	var gone []string
	for name := range f.specs {
		if next[name] == nil {
			gone = append(gone, name)
		}
	}
	f.specs = next
	f.mu.Unlock()
	f.reassign(ctx)
	for _, name := range gone {
		f.writer.remove(ctx, name)
	}
	return nil
}

func (f *Fanout) apply(ctx context.Context, ev store.Event) {
	switch {
	case ev.Stream != nil:
		s := ev.Stream
		f.Publish(config.New(s.Name, s.Generation, s.Hash, s.Format, s.Config, nil, s.Labels, s.AcceptTime))
	case ev.SinkPut != nil:
		n := f.normalise(ev.SinkPut)
		f.mu.Lock()
		old, known := f.specs[n.GetName()]
		same := proto.Equal(old, n)
		if !known {
			f.fresh[n.GetName()] = true
		}
		f.specs[n.GetName()] = n
		f.mu.Unlock()
		if !same {
			f.reassign(ctx)
		}
	case ev.SinkDeleted != "":
		f.mu.Lock()
		_, known := f.specs[ev.SinkDeleted]
		delete(f.specs, ev.SinkDeleted)
		delete(f.fresh, ev.SinkDeleted)
		f.mu.Unlock()
		if known {
			f.reassign(ctx)
			f.writer.remove(ctx, ev.SinkDeleted)
		}
	}
}

// normalise fills a stored spec's defaults; a spec this replica cannot
// validate (e.g. a kind not compiled in) is kept as stored, listed, and
// fails to start where it is owned.
func (f *Fanout) normalise(s *confighubv1.Sink) *confighubv1.Sink {
	if n, err := f.eng.ValidateSink(s); err == nil {
		return n
	}
	return proto.Clone(s).(*confighubv1.Sink)
}

// partitionKey is what rendezvous hashing places. Sinks of a stream with
// gates (waves, or a konnect sink waiting for a gateway) must see each
// other's progress, which the engine tracks locally: the whole stream goes
// to one owner. Other sinks are placed one by one.
func partitionKey(s *confighubv1.Sink, gated map[string]bool) string {
	if gated[s.GetStream()] {
		return "stream/" + s.GetStream()
	}
	return "sink/" + s.GetName()
}

func isGated(s *confighubv1.Sink) bool {
	o := s.GetOptions()
	switch {
	case o.GetWave() > 0:
		return true
	case o.GetGate() == confighubv1.Gate_GATE_ANY_GATEWAY:
		return true
	case o.GetGate() == confighubv1.Gate_GATE_UNSPECIFIED && s.GetKind() == "konnect":
		return true
	}
	return false
}

// owners maps every known sink to the member that owns it. f.mu is held.
func (f *Fanout) owners(members []string) map[string]string {
	gated := map[string]bool{}
	for _, s := range f.specs {
		if isGated(s) {
			gated[s.GetStream()] = true
		}
	}
	out := make(map[string]string, len(f.specs))
	for name, s := range f.specs {
		out[name] = Owner(partitionKey(s, gated), members)
	}
	return out
}

// want returns the specs this replica owns now. f.mu is held.
func (f *Fanout) want(members []string, registered bool) map[string]*confighubv1.Sink {
	out := map[string]*confighubv1.Sink{}
	if !registered || f.stopping {
		return out
	}
	for name, owner := range f.owners(members) {
		if owner == f.mem.ID() {
			out[name] = f.specs[name]
		}
	}
	return out
}

// sinkStopper is the engine's StopSink: it stops a sink that goes on
// elsewhere without logging it as deleted.
type sinkStopper interface{ StopSink(name string) error }

// release stops a sink that still exists but no longer runs here, and says
// where it went (a hand-over is not a deletion). f.mu is not held.
func (f *Fanout) release(name, stream, to string) error {
	stop := f.eng.DeleteSink
	if s, ok := f.eng.(sinkStopper); ok {
		stop = s.StopSink
	}
	if err := stop(name); err != nil {
		return err
	}
	switch to {
	case "":
		f.log.Info("cluster: sink released: this replica is not serving", "sink", name, "stream", stream)
	default:
		f.log.Info("cluster: sink handed over", "sink", name, "stream", stream, "to", to)
	}
	return nil
}

// reassign starts the workers of the sinks this replica gained (seeded with
// their stored applied generation and hash, so the hash skip holds), stops
// the ones it lost and replaces the ones whose spec changed. It returns the
// start errors by sink.
func (f *Fanout) reassign(ctx context.Context) map[string]error {
	f.admin.Lock()
	defer f.admin.Unlock()
	members, registered := f.mem.Members()
	f.mu.Lock()
	want := f.want(members, registered)
	var stop []string
	var start []*confighubv1.Sink
	// moved: sinks stopped here that still exist, with their new owner
	// ("" when this replica owns nothing: stopping or not registered).
	moved := map[string]*confighubv1.Sink{}
	owners := map[string]string{}
	if registered && !f.stopping {
		owners = f.owners(members)
	}
	for name := range f.running {
		if want[name] == nil {
			stop = append(stop, name)
			if s := f.specs[name]; s != nil {
				moved[name] = s
			}
		}
	}
	for name, s := range want {
		if r := f.running[name]; r == nil || !proto.Equal(r, s) {
			start = append(start, s)
		}
	}
	f.mu.Unlock()
	slices.Sort(stop)
	slices.SortFunc(start, func(a, b *confighubv1.Sink) int { return strings.Compare(a.GetName(), b.GetName()) })

	for _, name := range stop {
		del := f.eng.DeleteSink
		if s := moved[name]; s != nil {
			del = func(name string) error { return f.release(name, s.GetStream(), owners[name]) }
		}
		if err := del(name); err != nil && !errors.Is(err, engine.ErrSinkNotFound) {
			f.log.Warn("cluster: stopping a sink failed", "sink", name, "error", err)
		}
		f.mu.Lock()
		delete(f.running, name)
		f.mu.Unlock()
	}
	errs := map[string]error{}
	if len(start) > 0 {
		f.eng.Restore(f.appliedFor(ctx, start))
	}
	for _, s := range start {
		// Marked running before it starts: the status writer keeps only the
		// statuses of running sinks, and the first ones come from PutSink.
		f.mu.Lock()
		prev := f.running[s.GetName()]
		f.running[s.GetName()] = s
		f.mu.Unlock()
		if _, _, err := f.eng.PutSink(s); err != nil {
			errs[s.GetName()] = err
			f.log.Error("cluster: starting an owned sink failed", "sink", s.GetName(), "error", err)
			f.mu.Lock()
			if prev != nil {
				f.running[s.GetName()] = prev // the engine kept the old one
			} else {
				delete(f.running, s.GetName())
			}
			f.mu.Unlock()
		}
	}
	// Fresh holds only until the reassign that follows the put: once any
	// replica may have run the sink, its start must read the record.
	f.mu.Lock()
	clear(f.fresh)
	f.mu.Unlock()
	f.logOwnership(members, registered, start, stop)
	f.writer.follow(ctx)
	return errs
}

// appliedFor reads the stored applied records of the sinks about to start
// (a sink moved from another replica resumes from what that replica
// recorded); when the store cannot be read it falls back to the records
// loaded at start.
func (f *Fanout) appliedFor(ctx context.Context, start []*confighubv1.Sink) []store.Applied {
	f.mu.Lock()
	allFresh := true
	for _, s := range start {
		allFresh = allFresh && f.fresh[s.GetName()]
	}
	if allFresh {
		// A sink put at run time (a controller registering gateways one by
		// one): no record to read.
		for _, s := range start {
			delete(f.fresh, s.GetName())
		}
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, f.opTimeout)
	all, err := f.st.ListApplied(tctx)
	cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.log.Warn("cluster: reading applied records failed; starting from the records loaded at start", "error", err)
		all = slices.Collect(func(yield func(store.Applied) bool) {
			for _, a := range f.seed {
				if !yield(a) {
					return
				}
			}
		})
	}
	names := map[string]bool{}
	for _, s := range start {
		names[s.GetName()] = true
		delete(f.fresh, s.GetName())
	}
	var out []store.Applied
	for _, a := range all {
		if names[a.Sink] {
			out = append(out, a)
		}
	}
	return out
}

func (f *Fanout) logOwnership(members []string, registered bool, start []*confighubv1.Sink, stop []string) {
	f.mu.Lock()
	owned := make([]string, 0, len(f.running))
	for name := range f.running {
		owned = append(owned, name)
	}
	slices.Sort(owned)
	line := strings.Join(owned, ",")
	changed := line != f.owned || len(start) > 0 || len(stop) > 0
	f.owned = line
	f.mu.Unlock()
	if !changed {
		return
	}
	started := make([]string, len(start))
	for i, s := range start {
		started[i] = s.GetName()
	}
	f.log.Info("cluster: sinks owned", "registered", registered, "members", strings.Join(members, ","),
		"count", len(owned), "owned", "["+line+"]", "started", strings.Join(started, ","), "stopped", strings.Join(stop, ","))
}

// owns says whether this replica runs sink's worker.
func (f *Fanout) owns(sink string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[sink] != nil
}

// Restore keeps the applied records loaded at start; a sink is seeded when
// this replica gains it (from a fresh read of the store when possible).
func (f *Fanout) Restore(applied []store.Applied) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range applied {
		f.seed[a.Sink] = a
	}
}

// Publish hands cfg to the local engine (which ignores a generation it
// has) and remembers it for the generation statuses.
func (f *Fanout) Publish(cfg *config.Config) {
	if cfg == nil {
		return
	}
	f.eng.Publish(cfg)
	f.mu.Lock()
	defer f.mu.Unlock()
	gs := f.gens[cfg.Stream]
	if n := len(gs); n > 0 && gs[n-1].gen >= cfg.Generation {
		return
	}
	gs = append(gs, genInfo{gen: cfg.Generation, hash: cfg.Hash, accept: cfg.AcceptTime, labels: cfg.Labels})
	if len(gs) > keepGenerations {
		gs = slices.Clone(gs[len(gs)-keepGenerations:])
	}
	f.gens[cfg.Stream] = gs
}

// Current is the stream's newest configuration (every replica follows
// every stream).
func (f *Fanout) Current(stream string) *config.Config { return f.eng.Current(stream) }

// ValidateSink normalises a spec with the local engine's registry.
func (f *Fanout) ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error) {
	return f.eng.ValidateSink(spec)
}

// PutSink records a stored spec and starts its worker if this replica owns
// it (the error of that start is returned).
func (f *Fanout) PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error) {
	n, err := f.eng.ValidateSink(spec)
	if err != nil {
		return nil, false, err
	}
	f.mu.Lock()
	_, existed := f.specs[n.GetName()]
	f.specs[n.GetName()] = n
	if !existed {
		f.fresh[n.GetName()] = true
	}
	f.mu.Unlock()
	if err := f.reassign(context.Background())[n.GetName()]; err != nil {
		return nil, false, err
	}
	return proto.Clone(n).(*confighubv1.Sink), !existed, nil
}

// DeleteSink forgets a sink, stops its worker here if it runs here, and
// removes its status key.
func (f *Fanout) DeleteSink(name string) error {
	f.mu.Lock()
	_, ok := f.specs[name]
	delete(f.specs, name)
	delete(f.fresh, name)
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", engine.ErrSinkNotFound, name)
	}
	f.reassign(context.Background())
	f.writer.remove(context.Background(), name)
	return nil
}

// SinkCount is how many stored sinks a stream has, wherever they run.
func (f *Fanout) SinkCount(stream string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.specs {
		if s.GetStream() == stream {
			n++
		}
	}
	return n
}

// ListSinks lists every stored sink of a stream ("" = all), wherever it
// runs.
func (f *Fanout) ListSinks(stream string) []*confighubv1.Sink {
	f.mu.Lock()
	out := make([]*confighubv1.Sink, 0, len(f.specs))
	for _, s := range f.specs {
		if stream == "" || s.GetStream() == stream {
			out = append(out, proto.Clone(s).(*confighubv1.Sink))
		}
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b *confighubv1.Sink) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// Status is the stream's status from the mirror of the status keys, at
// the etcd revision of the mirror.
func (f *Fanout) Status(stream string) (*confighubv1.GetStatusResponse, bool) {
	if stream == "" {
		stream = config.DefaultStream
	}
	rev, sinks := f.mirror.snapshot(stream)
	resp := f.snapshot(stream, rev, sinks)
	if len(resp.GetSinks()) == 0 && len(resp.GetGenerations()) == 0 && f.eng.Current(stream) == nil {
		return nil, false
	}
	return resp, true
}

// Watch streams the status of a stream with etcd revisions: a snapshot
// (reason "start") then the changes; from a revision, the changes after it
// (a snapshot with reason "resume-gap" when etcd compacted them); a
// watcher too slow for its buffer gets a fresh snapshot (reason
// "slow-watcher").
func (f *Fanout) Watch(ctx context.Context, stream string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse {
	if stream == "" {
		stream = config.DefaultStream
	}
	return f.watchStatus(ctx, stream, fromRevision)
}

// LastApplied is the owner's record; another replica knows the bytes only
// when the sink's applied hash is the stream's current one.
func (f *Fanout) LastApplied(sinkName string) (*config.Config, bool) {
	if f.owns(sinkName) {
		return f.eng.LastApplied(sinkName)
	}
	f.mu.Lock()
	spec := f.specs[sinkName]
	f.mu.Unlock()
	if spec == nil {
		return nil, false
	}
	st := f.mirror.get(sinkName)
	cur := f.eng.Current(spec.GetStream())
	if st != nil && cur != nil && st.GetAppliedHash() == cur.Hash {
		return cur, true
	}
	return nil, false
}

// LastFailed is known only where the sink runs (the failed bytes are not
// replicated).
func (f *Fanout) LastFailed(sinkName string) (*config.Config, *sink.Error, bool) {
	if f.owns(sinkName) {
		return f.eng.LastFailed(sinkName)
	}
	return nil, nil, false
}
