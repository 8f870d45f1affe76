package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/sinkspec"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// DefaultMaxConcurrentApplies is the hub-wide limit of applies in flight,
// per pool: gateway sinks (Describe().Gateway) share one pool, every other
// sink (konnect, file, plugins, ...) another of the same size.
const DefaultMaxConcurrentApplies = 64

// ErrSinkNotFound is returned for an unknown sink name.
var ErrSinkNotFound = errors.New("sink not found")

// ErrStopped is returned by PutSink and DeleteSink after Stop.
var ErrStopped = errors.New("engine stopped")

// Recorder stores what a sink applied, and when a generation converged,
// so that a restarted hub shows the time it observed (see
// RestoreConverged) instead of observing it again; store.Store satisfies
// it.
type Recorder interface {
	RecordApplied(ctx context.Context, a store.Applied) error
	RecordConverged(ctx context.Context, c store.Converged) error
}

var _ Recorder = store.Store(nil)

// Option configures an Engine.
type Option func(*Engine)

// WithClock sets the clock of every timer of the engine (tests pass a fake).
func WithClock(c clockwork.Clock) Option { return func(e *Engine) { e.clock = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithMessageRedactor sets how the text of a sink's error (its message and
// its entity errors' messages) is cleaned before it reaches status, logs
// and GetConfig: destinations quote secrets in their errors (Kong names a
// duplicate key-auth key in full). The raw body is kept as it was. Default:
// the text as it is.
func WithMessageRedactor(f func(string) string) Option {
	return func(e *Engine) { e.redactMsg = f }
}

// WithSecretValues sets how the secrets of a sink's spec are found (a
// Konnect token, a Kong header value): a destination or plugin that quotes
// one in an error, or in what its Runner reports, has it replaced by
// "<redacted>" before status, logs and GetConfig see the text. Default:
// none.
func WithSecretValues(f func(*confighubv1.Sink) []string) Option {
	return func(e *Engine) { e.secrets = f }
}

// minScrubbed is the shortest secret value scrubbed from error texts:
// replacing every "a" of a message would leave nothing to read.
const minScrubbed = 4

// scrubber returns what replaces spec's secret values in a text, nil when
// it has none.
func (e *Engine) scrubber(spec *confighubv1.Sink) *strings.Replacer {
	if e.secrets == nil {
		return nil
	}
	vals := slices.DeleteFunc(e.secrets(spec), func(v string) bool { return len(v) < minScrubbed })
	if len(vals) == 0 {
		return nil
	}
	// Longest first: a value that contains another is replaced whole.
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, "<redacted>")
	}
	return strings.NewReplacer(pairs...)
}

// WithMaxConcurrentApplies sets the hub-wide limit of applies in flight of
// each pool (gateway sinks; every other sink).
func WithMaxConcurrentApplies(n int) Option {
	return func(e *Engine) {
		if n > 0 {
			e.maxApplies = n
		}
	}
}

// WithRecorder sets where applied generations are recorded.
func WithRecorder(r Recorder) Option { return func(e *Engine) { e.recorder = r } }

// WithMetrics sets the metrics sink.
func WithMetrics(m Metrics) Option {
	return func(e *Engine) {
		if m != nil {
			e.metrics = m
		}
	}
}

// WithWatchBuffer sets each status watcher's buffer.
func WithWatchBuffer(n int) Option {
	return func(e *Engine) { e.brokerOpts = append(e.brokerOpts, status.WithWatchBuffer(n)) }
}

// DefaultStatusDispatchWindow is how long a status change waits for the
// others of its round before it is sent to the watchers (see
// status.WithDispatchWindow).
const DefaultStatusDispatchWindow = 5 * time.Millisecond

// WithStatusDispatchWindow sets the status fan-out's batching window; 0
// sends every change at once.
func WithStatusDispatchWindow(d time.Duration) Option {
	return func(e *Engine) { e.dispatchWindow = d }
}

// WithNewStream sets a function called with the name of each stream the
// engine gets (by Publish or a sink of it), once, when it first appears: a
// replica's status writer follows the stream from then on, whichever
// replica accepted its push. It is called with the engine's lock held and
// must not call the engine.
func WithNewStream(fn func(stream string)) Option { return func(e *Engine) { e.newStream = fn } }

// WithRandom sets the source of backoff jitter: a function returning a
// uniform value in [0,1). Tests pass a constant.
func WithRandom(f func() float64) Option {
	return func(e *Engine) {
		if f != nil {
			e.rnd = f
		}
	}
}

// Engine fans each stream's newest configuration out to its sinks. See the
// package doc for its guarantees.
//
// Status semantics: desired_generation is the generation the sink last took
// up (the stream's newest is in GenerationStatus), so the event rate follows
// the sinks' work, not the push rate. A Retry-After applies to any
// generation (the destination asked the hub to wait); backoff of one
// generation is dropped when a newer one arrives. A permanently rejected
// generation is not retried even on Resync. Replacing a sink with a changed
// spec starts it afresh; putting an identical spec changes nothing.
//
// Memory: one *config.Config per stream is shared by every sink; per sink the
// engine keeps constant state plus pointers to the configs in its slot, last
// applied and last failed (dropped once a newer generation is applied).
// Status history is bounded by status.DefaultHistory, generations by the
// last 16 per stream.
//
// Replicas (WithOwnership): every sink is known, a worker runs only for the
// owned ones; the others are peers followed through ObserveSink. Gates and
// generation counts run over every sink of the stream; only the stream's
// leader records the convergence metric, so each generation counts once over
// replicas.
type Engine struct {
	reg       *sink.Registry
	specs     *sinkspec.Checker
	clock     clockwork.Clock
	log       *slog.Logger
	redactMsg func(string) string
	// secrets finds a sink's secrets (scrubbed from its error texts).
	secrets    func(*confighubv1.Sink) []string
	metrics    Metrics
	recorder   Recorder
	maxApplies int
	// gatewaySlots limit the applies in flight of gateway sinks, slots
	// those of every other sink: a hung Konnect holds none of the
	// gateways' slots. Guarded by mu.
	gatewaySlots, slots *slotPool
	rnd                 func() float64
	// deps are the options every worker takes (made once by New).
	deps       *workerDeps
	own        Ownership
	brokerOpts []status.Option
	newStream  func(string)
	broker     *status.Broker
	// dispatchWindow batches the status fan-out (real time: it delays
	// delivery and schedules no sink work, so a fake engine clock must not
	// hold status back).
	dispatchWindow time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ops counts the PutSink and DeleteSink calls under way; Stop waits for
	// them. Added to under mu while not stopped.
	ops      sync.WaitGroup
	stopOnce sync.Once

	mu      sync.Mutex
	streams map[string]*stream
	sinks   map[string]*worker
	// peers are the sinks other replicas run (see Ownership), remote the
	// newest shared status of every sink (ObserveSink).
	peers    map[string]*peer
	remote   map[string]*confighubv1.SinkStatus
	restored map[string]store.Applied
	// restoredConv are the convergences recorded before a restart, by
	// stream, until Publish gives them to their generation.
	restoredConv map[string]store.Converged
	// conv holds convergences not yet recorded, by stream (the newest
	// wins); convKick wakes the goroutine that records them off mu.
	conv        map[string]store.Converged
	convKick    chan struct{}
	convRunning bool
	// specBytes is the encoded size of every spec of sinks and peers,
	// kept as they come and go, so that SpecBytes (asked on every PutSink)
	// does not size them all.
	specBytes int
	// ownedLogged is the set of sinks run here last logged (replicas).
	ownedLogged string
	// names serialises PutSink and DeleteSink per sink name: they wait for
	// the old worker outside mu, and a sink that ignores its ctx must hold
	// up the calls for its own name only.
	names   map[string]*nameLock
	stopped bool
	// held counts the streams with a configuration and their bytes.
	held held
}

// nameLock is one sink name's admin lock; refs counts its holders and
// waiters, so that it is dropped when unused.
type nameLock struct {
	mu   sync.Mutex
	refs int
}

// admin starts a PutSink or DeleteSink of name: it fails after Stop, else
// it holds name's lock until the returned func is called.
func (e *Engine) admin(name string) (func(), error) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, ErrStopped
	}
	e.ops.Add(1)
	l := e.names[name]
	if l == nil {
		l = &nameLock{}
		e.names[name] = l
	}
	l.refs++
	e.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		e.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(e.names, name)
		}
		e.mu.Unlock()
		e.ops.Done()
	}, nil
}

// stream is one config channel and its sinks. Guarded by Engine.mu.
type stream struct {
	name  string
	cur   *config.Config
	sinks map[string]*worker
	peers map[string]*peer
	// waves counts the sinks (run here or not) per wave, so a wave-0 sink
	// checks its gate in O(1).
	waves map[uint32]int
	gens  []*genTrack
	// waiters are workers whose gate depends on the other sinks' progress.
	waiters map[*worker]struct{}
}

// genTrack counts the sinks that applied one generation.
type genTrack struct {
	gen      uint64
	hash     string
	accept   time.Time
	labels   map[string]string
	applied  uint32
	total    uint32
	converge time.Time
	// counted: the convergence was observed (or restored) by the stream's
	// leader, here or, as the shared view shows, on another replica.
	// unled: it was observed here live while another replica led the
	// stream; if this replica takes the lead before the leader's status
	// arrives, it counts it (see countUnled).
	counted bool
	unled   bool
}

const keepGenerations = status.DefaultGenerations

// New returns an engine. It starts no goroutine until sinks are put.
func New(reg *sink.Registry, opts ...Option) *Engine {
	e := &Engine{
		reg:          reg,
		specs:        sinkspec.New(reg),
		clock:        clockwork.NewRealClock(),
		log:          slog.New(slog.DiscardHandler),
		metrics:      NopMetrics{},
		maxApplies:   DefaultMaxConcurrentApplies,
		rnd:          rand.Float64,
		streams:      map[string]*stream{},
		sinks:        map[string]*worker{},
		peers:        map[string]*peer{},
		remote:       map[string]*confighubv1.SinkStatus{},
		own:          ownAll{},
		restored:     map[string]store.Applied{},
		restoredConv: map[string]store.Converged{},
		conv:         map[string]store.Converged{},
		convKick:     make(chan struct{}, 1),
		names:        map[string]*nameLock{},

		dispatchWindow: DefaultStatusDispatchWindow,
	}
	for _, o := range opts {
		o(e)
	}
	e.deps = &workerDeps{clock: e.clock, log: e.log, metrics: e.metrics, recorder: e.recorder, rnd: e.rnd, redact: e.redactError}
	e.gatewaySlots = newSlotPool("gateway", e.maxApplies)
	e.slots = newSlotPool("non-gateway", e.maxApplies)
	// Revisions start at the clock's nanoseconds, so a restarted hub never
	// hands out a revision a watcher saw before the restart.
	first := status.WithFirstRevision(uint64(max(e.clock.Now().UnixNano(), 0)))
	window := status.WithDispatchWindow(e.dispatchWindow)
	e.broker = status.New(append([]status.Option{first, window}, append(e.brokerOpts, status.WithGenerations(keepGenerations))...)...)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

// stream returns the named stream, made on first use. Names are resolved
// at the edge (the hub gives a push without a stream config.DefaultStream,
// sinkspec a sink without one): the engine takes them as they are.
func (e *Engine) stream(name string) *stream {
	st := e.streams[name]
	if st == nil {
		st = &stream{name: name, sinks: map[string]*worker{}, peers: map[string]*peer{}, waves: map[uint32]int{}, waiters: map[*worker]struct{}{}}
		e.streams[name] = st
		if e.newStream != nil {
			e.newStream(name)
		}
	}
	return st
}

// Restore seeds the applied generation and hash of sinks from a store, so a
// restarted hub skips what the destinations already hold. Call it before
// the sinks are put.
func (e *Engine) Restore(applied []store.Applied) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range applied {
		e.restored[a.Sink] = a
	}
}

// RestoreConverged seeds when generations converged before a restart: a
// generation Publish makes current with a recorded convergence keeps that
// time, and is neither logged nor observed again. Call it before Publish.
func (e *Engine) RestoreConverged(cs []store.Converged) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range cs {
		e.restoredConv[c.Stream] = c
	}
}

// Publish makes cfg its stream's newest configuration and offers it to every
// sink of the stream. It never waits for a sink. A generation not newer than
// the stream's current one is ignored.
func (e *Engine) Publish(cfg *config.Config) {
	if cfg == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stream(cfg.Stream)
	if st.cur != nil && cfg.Generation <= st.cur.Generation {
		e.trackSuperseded(st, cfg)
		return
	}
	e.held.replace(st.cur, cfg)
	st.cur = cfg
	g := e.newGenTrack(st, cfg)
	if c, ok := e.restoredConv[st.name]; ok {
		delete(e.restoredConv, st.name)
		if c.Generation == g.gen {
			g.converge, g.counted = c.Time, true
		}
	}
	st.gens = append(st.gens, g)
	if len(st.gens) > keepGenerations {
		n := copy(st.gens, st.gens[len(st.gens)-keepGenerations:])
		clear(st.gens[n:])
		st.gens = st.gens[:n]
	}
	e.metrics.StreamGeneration(st.name, cfg.Generation)
	// Sinks that have it already applied it before a restart.
	e.checkConverged(st, g, false)
	e.broker.PutGeneration(st.name, g.proto())
	now := e.clock.Now()
	for _, w := range st.sinks {
		w.offer(cfg, now)
	}
}

// newGenTrack starts counting cfg's generation over the stream's sinks and
// peers. e.mu is held.
func (e *Engine) newGenTrack(st *stream, cfg *config.Config) *genTrack {
	g := &genTrack{gen: cfg.Generation, hash: cfg.Hash, accept: cfg.AcceptTime, labels: cfg.Labels, total: uint32(len(st.sinks) + len(st.peers))}
	for _, w := range st.sinks {
		if w.m.appliedGen >= g.gen {
			g.applied++
		}
	}
	for _, p := range st.peers {
		if p.appliedGen() >= g.gen {
			g.applied++
		}
	}
	return g
}

// trackSuperseded records a generation published after a newer one of its
// stream: two pushes acked together publish from their own goroutines, in
// either order. The older one is never offered to a sink (latest wins), but
// it was acknowledged, so its generation status is kept and published like
// any other. e.mu is held.
func (e *Engine) trackSuperseded(st *stream, cfg *config.Config) {
	i := sort.Search(len(st.gens), func(i int) bool { return st.gens[i].gen >= cfg.Generation })
	if (i < len(st.gens) && st.gens[i].gen == cfg.Generation) || (i == 0 && len(st.gens) >= keepGenerations) {
		return
	}
	g := e.newGenTrack(st, cfg)
	st.gens = slices.Insert(st.gens, i, g)
	if len(st.gens) > keepGenerations {
		n := copy(st.gens, st.gens[len(st.gens)-keepGenerations:])
		clear(st.gens[n:])
		st.gens = st.gens[:n]
	}
	e.checkConverged(st, g, false)
	e.broker.PutGeneration(st.name, g.proto())
}

// Current returns a stream's newest configuration, nil if none.
func (e *Engine) Current(streamName string) *config.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.streams[streamName]; st != nil {
		return st.cur
	}
	return nil
}

// PutSink validates spec, builds the sink with its kind's factory and starts
// its worker. A sink of the same name is replaced (its worker stopped and the
// sink closed first) unless the normalised spec is unchanged. A new sink
// gets the stream's current generation at once.
//
// With an Ownership, a sink not owned here is kept as a peer. A change of
// ownership during the call (Reown may have looked before the sink was
// registered) is caught by deciding again once it is registered.
func (e *Engine) PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error) {
	norm, kind, opts, err := e.validate(spec)
	if err != nil {
		return nil, false, err
	}
	created := false
	defer e.logOwned()
	for {
		out, c, owned, err := e.putSink(norm, opts, kind)
		created = created || c
		if err != nil || e.own.OwnsSink(norm.GetName()) == owned {
			return out, created, err
		}
	}
}

func (e *Engine) putSink(norm *confighubv1.Sink, opts sinkspec.Options, kind sink.Kind) (*confighubv1.Sink, bool, bool, error) {
	done, err := e.admin(norm.GetName())
	if err != nil {
		return nil, false, false, err
	}
	defer done()

	e.mu.Lock()
	owned := e.own.OwnsSink(norm.GetName())
	old := e.sinks[norm.GetName()]
	prevPeer := e.peers[norm.GetName()]
	if (owned && old != nil && proto.Equal(old.spec, norm)) || (!owned && prevPeer != nil && proto.Equal(prevPeer.spec, norm)) {
		e.mu.Unlock()
		return proto.Clone(norm).(*confighubv1.Sink), false, owned, nil
	}
	e.mu.Unlock()
	if !owned {
		out, created, err := e.putPeer(norm, opts, kind, old)
		return out, created, owned, err
	}

	s, err := kind.Factory(proto.Clone(norm).(*confighubv1.Sink), sink.Deps{Logger: e.log.With("sink", norm.GetName(), "kind", norm.GetKind()), Clock: e.clock})
	if err != nil {
		if errors.Is(err, sink.ErrInvalidSpec) || errors.Is(err, sink.ErrUnknownKind) {
			return nil, false, owned, err // a factory names the sink (sink.Factory)
		}
		return nil, false, owned, fmt.Errorf("%w: sink %q: %w", sink.ErrInvalidSpec, norm.GetName(), err)
	}
	if old != nil {
		// The new worker's first status replaces the old one, unless the
		// sink moves to another stream.
		e.removeWorker(old, old.st.name != norm.GetStream())
	}

	// No sink method runs under e.mu: Publish (the push path) takes it.
	caps := s.Describe()
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		closeSink(e.log, norm.GetName(), s)
		return nil, false, owned, ErrStopped
	}
	w := newWorker(e, norm, opts, s, caps)
	var seed *confighubv1.SinkStatus
	if p := e.peers[w.name]; p != nil {
		// Taken over from another replica: resume from its last status
		// when the store's record is older.
		e.removePeer(p, p.st.name != w.st.name)
		seed = p.status
	}
	e.addWorker(w, seed)
	e.mu.Unlock()
	e.log.Info("sink started", "sink", w.name, "kind", w.kind, "stream", w.st.name, "replaced", old != nil || prevPeer != nil)
	return proto.Clone(norm).(*confighubv1.Sink), old == nil && prevPeer == nil, owned, nil
}

// DeleteSink stops a sink's goroutines, closes it and removes its status.
func (e *Engine) DeleteSink(name string) error {
	return e.deleteSink(name, "sink deleted", slog.LevelInfo)
}

// StopSink is DeleteSink for a sink that goes on elsewhere (a replica
// hands it over): the same stop, logged at debug only, since the caller
// logs where the sink went and "sink deleted" would be false.
func (e *Engine) StopSink(name string) error {
	return e.deleteSink(name, "sink stopped here", slog.LevelDebug)
}

func (e *Engine) deleteSink(name, msg string, level slog.Level) error {
	defer e.logOwned()
	done, err := e.admin(name)
	if err != nil {
		return err
	}
	defer done()
	e.mu.Lock()
	w := e.sinks[name]
	if p := e.peers[name]; p != nil {
		e.removePeer(p, true)
		e.mu.Unlock()
		e.log.Info("sink deleted", "sink", name, "stream", p.st.name, "run_here", false)
		return nil
	}
	e.mu.Unlock()
	if w == nil {
		return fmt.Errorf("%w: %q", ErrSinkNotFound, name)
	}
	e.removeWorker(w, true)
	e.log.Log(context.Background(), level, msg, "sink", name, "kind", w.kind, "stream", w.st.name)
	return nil
}

// addWorker registers w and starts it, seeded with its restored record or
// seed (its last shared status), whichever is newer. e.mu is held.
func (e *Engine) addWorker(w *worker, seed *confighubv1.SinkStatus) {
	st := w.st
	if a, ok := e.restored[w.name]; ok {
		delete(e.restored, w.name)
		if a.Stream == st.name {
			w.m.seed(a.Generation, a.Hash)
			w.lastAppliedTime = a.Time
		}
	}
	if seed.GetStream() == st.name && seed.GetAppliedGeneration() > w.m.appliedGen {
		w.m.seed(seed.GetAppliedGeneration(), seed.GetAppliedHash())
		if t := seed.GetLastAppliedTime(); t != nil { // nil would read as 1970
			w.lastAppliedTime = t.AsTime()
		}
	}
	if !w.lastAppliedTime.IsZero() {
		// The last success is known (status shows it): staleness alerts
		// on the metric see no gap until the sink's next apply.
		e.metrics.LastSuccess(w.name, w.kind, w.lastAppliedTime)
	}
	e.sinks[w.name] = w
	w.specSize = proto.Size(w.spec)
	e.specBytes += w.specSize
	st.sinks[w.name] = w
	st.waves[w.opts.Wave]++
	e.join(st, w.m.appliedGen)
	if st.cur != nil {
		// A new sink gets the current generation at once: no debounce.
		w.m.desired = st.cur
	}
	w.emit()
	e.kickWaiters(st)
	if r, ok := w.s.(sink.Runner); ok {
		w.goRun(func() { w.runRunner(r) })
	}
	w.wake()
}

// removeWorker unregisters w, stops its goroutines and closes its sink.
// w's name lock is held, e.mu is not.
func (e *Engine) removeWorker(w *worker, removeStatus bool) {
	e.mu.Lock()
	st := w.st
	w.removed = true
	delete(e.sinks, w.name)
	e.specBytes -= w.specSize
	delete(st.sinks, w.name)
	delete(st.waiters, w)
	if st.waves[w.opts.Wave]--; st.waves[w.opts.Wave] == 0 {
		delete(st.waves, w.opts.Wave)
	}
	e.leave(st, w.m.appliedGen)
	if removeStatus {
		e.broker.RemoveSink(st.name, w.name)
	}
	e.kickWaiters(st)
	e.mu.Unlock()
	w.cancel()
	w.active.Wait()
	// Only once the worker is gone: an apply finishing meanwhile would
	// re-create the series.
	if removeStatus {
		e.metrics.SinkRemoved(w.name, w.kind)
	}
	closeSink(e.log, w.name, w.s)
}

func closeSink(log *slog.Logger, name string, s sink.Sink) {
	if c, ok := s.(sink.Closer); ok {
		if err := c.Close(); err != nil {
			log.Warn("closing sink failed", "sink", name, "error", err)
		}
	}
}

// SinkCount is how many sinks a stream has (run here or not).
func (e *Engine) SinkCount(streamName string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.streams[streamName]
	if st == nil {
		return 0
	}
	return len(st.sinks) + len(st.peers)
}

// Sink returns a copy of one sink's normalised spec (run here or not), nil
// if there is none.
func (e *Engine) Sink(name string) *confighubv1.Sink {
	e.mu.Lock()
	var spec *confighubv1.Sink
	if w := e.sinks[name]; w != nil {
		spec = w.spec
	} else if p := e.peers[name]; p != nil {
		spec = p.spec
	}
	e.mu.Unlock()
	if spec == nil {
		return nil
	}
	return proto.Clone(spec).(*confighubv1.Sink)
}

// HasSink tells whether a sink of that name exists (run here or not),
// without copying its spec as Sink does.
func (e *Engine) HasSink(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sinks[name] != nil || e.peers[name] != nil
}

// SpecBytes is the encoded size of every sink's spec but except's, in
// O(1): the running total less except's size.
func (e *Engine) SpecBytes(except string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.specBytes
	if w := e.sinks[except]; w != nil {
		n -= w.specSize
	} else if p := e.peers[except]; p != nil {
		n -= p.specSize
	}
	return n
}

// ListSinks returns the normalised specs of a stream's sinks ("" = all),
// sorted by name.
func (e *Engine) ListSinks(streamName string) []*confighubv1.Sink {
	e.mu.Lock()
	out := make([]*confighubv1.Sink, 0, len(e.sinks))
	for _, w := range e.sinks {
		if streamName == "" || w.st.name == streamName {
			out = append(out, w.spec)
		}
	}
	for _, p := range e.peers {
		if streamName == "" || p.st.name == streamName {
			out = append(out, p.spec)
		}
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	for i, s := range out {
		out[i] = proto.Clone(s).(*confighubv1.Sink)
	}
	return out
}

// Status returns a consistent snapshot of a stream's status at one broker
// revision; false when the stream has neither a config nor a sink.
func (e *Engine) Status(streamName string) (*confighubv1.GetStatusResponse, bool) {
	return e.broker.Snapshot(streamName)
}

// Watch streams a stream's status: a snapshot (reason "start") or the
// changes after fromRevision (a snapshot with reason "resume-gap" when they
// are no longer buffered or fromRevision is from before a restart), then
// every change. A watcher whose buffer fills
// gets a fresh snapshot (reason "slow-watcher") instead of what it missed;
// the engine never waits for it. The channel is closed when ctx ends or the
// engine stops. Messages are shared: read only.
func (e *Engine) Watch(ctx context.Context, streamName string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse {
	return e.broker.Watch(ctx, streamName, fromRevision)
}

// LastApplied returns the configuration a sink last applied (or found
// already applied by hash).
func (e *Engine) LastApplied(sinkName string) (*config.Config, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.sinks[sinkName]
	if w == nil {
		// A peer's: a replica answers for every sink from the shared
		// status and the store (cluster.Diagnostics).
		return nil, false
	}
	if w.lastAppliedCfg != nil {
		return w.lastAppliedCfg, true
	}
	// Restored after a restart: the bytes are the current config's when the
	// hashes match.
	if cur := w.st.cur; cur != nil && w.m.appliedHash != "" && cur.Hash == w.m.appliedHash {
		return cur, true
	}
	return nil, false
}

// LastFailed returns the configuration and error of a sink's last failed
// apply (the error keeps the destination's raw Body), for a sink run here
// only: a replica answers for every sink from etcd, where each owner copies
// its sinks' (cluster.Diagnostics).
func (e *Engine) LastFailed(sinkName string) (*config.Config, *sink.Error, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.sinks[sinkName]
	if w == nil || w.lastFailedCfg == nil {
		return nil, nil, false
	}
	return w.lastFailedCfg, w.lastFailedErr, true
}

// Stop cancels every worker and runner, waits for their goroutines, closes
// the sinks and every status watcher.
// A second call waits for the first.
func (e *Engine) Stop() { e.stopOnce.Do(e.stop) }

func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.cancel()
	// PutSink and DeleteSink calls under way finish (closing what they
	// removed); after them the sinks no longer change.
	e.ops.Wait()
	e.mu.Lock()
	workers := make([]*worker, 0, len(e.sinks))
	for _, w := range e.sinks {
		workers = append(workers, w)
	}
	e.mu.Unlock()
	e.wg.Wait()
	for _, w := range workers {
		closeSink(e.log, w.name, w.s)
	}
	if e.recorder != nil {
		e.flushConverged()
	}
	e.broker.Close()
}

// checkConverged sets a generation's converge time once every sink of the
// stream (run here or not) applied it; the stream's leader observes and
// records it. Observed: the last apply is news, now; otherwise the sink
// that completed it joined having applied it already (restored after a
// restart, or a peer's status), so it converged before and was counted
// then: it is not counted again. e.mu is held.
func (e *Engine) checkConverged(st *stream, g *genTrack, observed bool) {
	if !g.converge.IsZero() || g.total == 0 || g.applied < g.total {
		return
	}
	if observed {
		g.converge = e.clock.Now()
	} else {
		// Without a record of it (lost in a crash, or a hub that kept
		// none), the last known apply is the best estimate.
		g.converge = g.accept
		for _, w := range st.sinks {
			if w.m.appliedGen >= g.gen && w.lastAppliedTime.After(g.converge) {
				g.converge = w.lastAppliedTime
			}
		}
		for _, p := range st.peers {
			if t := p.status.GetLastAppliedTime().AsTime(); p.appliedGen() >= g.gen && t.After(g.converge) {
				g.converge = t
			}
		}
	}
	if !e.own.OwnsStream(st.name) {
		g.unled = observed
		return
	}
	e.countConverged(st, g, observed)
}

// countConverged observes (when observed live) and records g's
// convergence on the stream's leader. e.mu is held.
func (e *Engine) countConverged(st *stream, g *genTrack, observed bool) {
	g.counted = true
	d := g.converge.Sub(g.accept)
	if observed {
		e.metrics.StreamConverged(st.name, g.gen, d)
		e.log.Info("generation converged", "stream", st.name, "generation", g.gen, "sinks", g.total, "since_accept", d)
	} else {
		e.log.Info("generation had converged before the restart", "stream", st.name, "generation", g.gen, "sinks", g.total, "since_accept", d)
	}
	e.recordConverged(store.Converged{Stream: st.name, Generation: g.gen, Time: g.converge})
}

// recordConverged queues c for the recorder's goroutine, started with the
// first. e.mu is held.
func (e *Engine) recordConverged(c store.Converged) {
	if e.recorder == nil {
		return
	}
	e.conv[c.Stream] = c
	if !e.convRunning && !e.stopped {
		e.convRunning = true
		e.wg.Add(1)
		go e.convergedWriter()
	}
	select {
	case e.convKick <- struct{}{}:
	default:
	}
}

// convergedWriter records the queued convergences off e.mu (a store write
// waits for the disk) until the engine stops; Stop records what is left.
func (e *Engine) convergedWriter() {
	defer e.wg.Done()
	for {
		select {
		case <-e.convKick:
		case <-e.ctx.Done():
			return
		}
		e.flushConverged()
	}
}

func (e *Engine) flushConverged() {
	e.mu.Lock()
	batch := e.conv
	e.conv = map[string]store.Converged{}
	e.mu.Unlock()
	for _, c := range batch {
		if err := e.recorder.RecordConverged(context.WithoutCancel(e.ctx), c); err != nil {
			e.log.Warn("recording a convergence failed; a restart shows it from the sinks' applied records", "stream", c.Stream, "generation", c.Generation, "error", err)
		}
	}
}

// join counts a sink that applied generation applied into the stream's
// generations; leave takes it out. e.mu is held.
func (e *Engine) join(st *stream, applied uint64)  { e.count(st, applied, 1) }
func (e *Engine) leave(st *stream, applied uint64) { e.count(st, applied, -1) }

func (e *Engine) count(st *stream, applied uint64, d int) {
	for _, g := range st.gens {
		g.total = uint32(int(g.total) + d)
		if applied >= g.gen {
			g.applied = uint32(int(g.applied) + d)
		}
		// A joining sink completes a generation only with an apply from
		// before it joined; one leaving may complete it now.
		e.checkConverged(st, g, d < 0)
		e.broker.PutGeneration(st.name, g.proto())
	}
}

// appliedMoved updates the generation counts after a sink's applied
// generation moved from prev to cur. e.mu is held.
func (e *Engine) appliedMoved(st *stream, prev, cur uint64) {
	for _, g := range st.gens {
		switch {
		case prev < g.gen && g.gen <= cur:
			g.applied++
		case cur < g.gen && g.gen <= prev:
			g.applied-- // a peer's status went back (its new owner re-seeded it)
		default:
			continue
		}
		e.checkConverged(st, g, true)
		e.broker.PutGeneration(st.name, g.proto())
	}
}

// appliedChanged updates the generation counts and the gates after w's
// applied generation moved from prev. e.mu is held.
func (e *Engine) appliedChanged(w *worker, prev uint64) {
	e.appliedMoved(w.st, prev, w.m.appliedGen)
	e.kickWaiters(w.st)
}

// kickWaiters wakes the workers whose gate may have changed. e.mu is held.
func (e *Engine) kickWaiters(st *stream) {
	for w := range st.waiters {
		w.wake()
		delete(st.waiters, w)
	}
}

func (g *genTrack) proto() *confighubv1.GenerationStatus {
	p := &confighubv1.GenerationStatus{
		Generation:   g.gen,
		Hash:         g.hash,
		SinksApplied: g.applied,
		SinksTotal:   g.total,
		Labels:       g.labels,
	}
	if !g.accept.IsZero() {
		p.AcceptTime = timestamppb.New(g.accept)
	}
	if !g.converge.IsZero() {
		p.ConvergeTime = timestamppb.New(g.converge)
	}
	return p
}

// redactError returns se with its messages passed through the redactor
// and scrubbed of the sink's secrets (scrub may be nil): a copy, so the
// sink's own value is left alone. The raw body is scrubbed too.
func (e *Engine) redactError(se *sink.Error, scrub *strings.Replacer) *sink.Error {
	if e.redactMsg == nil && scrub == nil {
		return se
	}
	clean := func(s string) string {
		if e.redactMsg != nil {
			s = e.redactMsg(s)
		}
		if scrub != nil {
			s = scrub.Replace(s)
		}
		return s
	}
	out := *se
	out.Message, out.Err = clean(se.Error()), nil
	if scrub != nil && len(se.Body) > 0 {
		out.Body = []byte(scrub.Replace(string(se.Body)))
	}
	if se.Code != "" {
		// Error() prefixes the code; keep Message without it.
		out.Message = strings.TrimPrefix(out.Message, string(se.Code)+": ")
	}
	out.EntityErrors = make([]*confighubv1.EntityError, len(se.EntityErrors))
	for i, ee := range se.EntityErrors {
		c := proto.Clone(ee).(*confighubv1.EntityError)
		for _, fe := range c.GetErrors() {
			fe.Message = clean(fe.GetMessage())
		}
		out.EntityErrors[i] = c
	}
	return &out
}

// View is the engine's status broker as a status.View (the hub's status
// port on one node).
func (e *Engine) View() status.View { return e.broker }
