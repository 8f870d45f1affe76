package engine

import (
	"cmp"
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

// DefaultStatusDispatchWindow is how long a status change waits for the
// others of its round before it is sent to the watchers.
const DefaultStatusDispatchWindow = 5 * time.Millisecond

// keepGenerations is how many generations per stream are tracked.
const keepGenerations = status.Generations

// ErrSinkNotFound is returned for an unknown sink name.
var ErrSinkNotFound = errors.New("sink not found")

// ErrStopped is returned by PutSink and DeleteSink after Stop.
var ErrStopped = errors.New("engine stopped")

// ErrStreamHasSinks is returned by DeleteStream while sinks read the
// stream.
var ErrStreamHasSinks = errors.New("stream has sinks")

// Recorder stores what a sink applied, and when a generation converged,
// so that a restarted hub shows the time it observed (RestoreConverged).
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

// WithMessageRedactor sets how the text of a sink's error (message and
// entity errors' messages) is cleaned before status, logs and GetConfig
// see it: destinations quote secrets in their errors. The raw body is kept.
func WithMessageRedactor(f func(string) string) Option {
	return func(e *Engine) { e.redactMsg = f }
}

// WithSecretValues sets how the secrets of a sink's spec are found: each is
// replaced by "<redacted>" in the sink's error texts, raw body and Runner
// reports.
func WithSecretValues(f func(*confighubv1.Sink) []string) Option {
	return func(e *Engine) { e.secrets = f }
}

// WithMaxConcurrentApplies sets the limit of applies in flight per pool.
func WithMaxConcurrentApplies(n int) Option {
	return func(e *Engine) { e.maxApplies = cmp.Or(max(n, 0), e.maxApplies) }
}

// WithRecorder sets where applied generations and convergences are recorded.
func WithRecorder(r Recorder) Option { return func(e *Engine) { e.recorder = r } }

// WithMetrics sets the metrics sink.
func WithMetrics(m Metrics) Option { return func(e *Engine) { e.metrics = cmp.Or(m, e.metrics) } }

// WithWatchBuffer sets each status watcher's buffer.
func WithWatchBuffer(n int) Option {
	return func(e *Engine) { e.brokerOpts = append(e.brokerOpts, status.WithWatchBuffer(n)) }
}

// WithStatusDispatchWindow sets the status fan-out's batching window; 0
// sends every change at once. It runs on real time (it only delays
// delivery), so a fake engine clock does not hold status back.
func WithStatusDispatchWindow(d time.Duration) Option {
	return func(e *Engine) { e.brokerOpts = append(e.brokerOpts, status.WithDispatchWindow(d)) }
}

// WithNewStream sets a function called once with the name of each stream
// the engine gets (by Publish or a sink of it); a replica's status writer
// follows it from then on. It is called under the engine's lock and must
// not call the engine.
func WithNewStream(fn func(stream string)) Option { return func(e *Engine) { e.newStream = fn } }

// WithRandom sets the source of backoff jitter, uniform in [0,1).
func WithRandom(f func() float64) Option {
	return func(e *Engine) {
		if f != nil {
			e.rnd = f
		}
	}
}

// Engine fans each stream's newest configuration out to its sinks (see the
// package doc). desired_generation is the generation a sink last took up,
// so the status event rate follows the sinks' work, not the push rate.
// Memory: one *config.Config per stream is shared by every sink; a sink
// holds at most its slot's, its last applied and its last failed one.
type Engine struct {
	specs      *sinkspec.Checker
	clock      clockwork.Clock
	log        *slog.Logger
	redactMsg  func(string) string
	secrets    func(*confighubv1.Sink) []string
	metrics    Metrics
	recorder   Recorder
	maxApplies int
	rnd        func() float64
	own        Ownership
	brokerOpts []status.Option
	newStream  func(string)
	broker     *status.Broker

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ops counts the PutSink and DeleteSink calls under way; Stop waits for
	// them. Added to under mu while not stopped.
	ops      sync.WaitGroup
	stopOnce sync.Once

	mu sync.Mutex
	// gatewaySlots limit the applies in flight of gateway sinks, slots
	// those of the others: a hung Konnect holds no gateway's slot.
	gatewaySlots, slots *slotPool
	streams             map[string]*stream
	// sinks are every sink, run here or by another replica.
	sinks map[string]*member
	// remote is the newest shared status of every sink (ObserveSink).
	remote       map[string]*confighubv1.SinkStatus
	restored     map[string]store.Applied
	restoredConv map[string]store.Converged // by stream, until Publish
	// conv holds convergences not yet recorded, by stream; convKick wakes
	// the goroutine that records them off mu.
	conv        map[string]store.Converged
	convKick    chan struct{}
	convRunning bool
	// specBytes is the encoded size of every sink's spec, kept as sinks
	// come and go: SpecBytes is asked on every PutSink.
	specBytes   int
	ownedLogged string // the sinks run here, as last logged
	// names serialises PutSink and DeleteSink per sink name: they wait for
	// the old worker outside mu, so a sink that ignores its ctx holds up
	// the calls for its own name only.
	names   map[string]*nameLock
	stopped bool
	// heldStreams hold a configuration of heldBytes in all (Raw), kept as
	// generations come and streams go.
	heldStreams int
	heldBytes   int64
}

// nameLock is one sink name's admin lock; refs counts its holders and
// waiters, so it is dropped when unused.
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
	sinks map[string]*member
	// waves counts the sinks per wave, so a wave-0 sink checks its gate in
	// O(1).
	waves map[uint32]int
	gens  []*genTrack // ascending
	// waiters are workers whose gate depends on the other sinks' progress.
	waiters map[*worker]struct{}
}

// genTrack counts the sinks that applied one generation (of all the
// stream's sinks).
type genTrack struct {
	gen      uint64
	hash     string
	accept   time.Time
	labels   map[string]string
	applied  uint32
	converge time.Time
	// counted: the stream's leader observed (or restored) the convergence.
	// unled: observed here while another replica led the stream; counted
	// here if this replica takes the lead first (Reown).
	counted, unled bool
}

// New returns an engine. It starts no goroutine until sinks are put.
func New(reg *sink.Registry, opts ...Option) *Engine {
	e := &Engine{
		specs:        sinkspec.New(reg),
		clock:        clockwork.NewRealClock(),
		log:          slog.New(slog.DiscardHandler),
		metrics:      NopMetrics{},
		maxApplies:   DefaultMaxConcurrentApplies,
		rnd:          rand.Float64,
		streams:      map[string]*stream{},
		sinks:        map[string]*member{},
		remote:       map[string]*confighubv1.SinkStatus{},
		own:          ownAll{},
		restored:     map[string]store.Applied{},
		restoredConv: map[string]store.Converged{},
		conv:         map[string]store.Converged{},
		convKick:     make(chan struct{}, 1),
		names:        map[string]*nameLock{},
	}
	for _, o := range opts {
		o(e)
	}
	e.gatewaySlots = newSlotPool("gateway", e.maxApplies)
	e.slots = newSlotPool("non-gateway", e.maxApplies)
	// Revisions start at the clock's nanoseconds: a restarted hub never
	// hands out a revision a watcher saw before.
	e.broker = status.New(append([]status.Option{status.WithFirstRevision(uint64(max(e.clock.Now().UnixNano(), 0))),
		status.WithDispatchWindow(DefaultStatusDispatchWindow)}, e.brokerOpts...)...)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

// stream returns the named stream, made on first use. Names are resolved
// at the edge (hub, sinkspec): the engine takes them as they are.
func (e *Engine) stream(name string) *stream {
	st := e.streams[name]
	if st == nil {
		st = &stream{name: name, sinks: map[string]*member{}, waves: map[uint32]int{}, waiters: map[*worker]struct{}{}}
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
// generation Publish makes current keeps its recorded time and is not
// observed again. Call it before Publish.
func (e *Engine) RestoreConverged(cs []store.Converged) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range cs {
		e.restoredConv[c.Stream] = c
	}
}

// Publish makes cfg its stream's newest configuration and offers it to every
// sink of the stream run here; it never waits for a sink. A generation
// older than the current one was acknowledged too (two pushes acked
// together publish in either order): it is tracked, never offered.
func (e *Engine) Publish(cfg *config.Config) {
	if cfg == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stream(cfg.Stream)
	i := sort.Search(len(st.gens), func(i int) bool { return st.gens[i].gen >= cfg.Generation })
	if st.cur != nil && cfg.Generation <= st.cur.Generation {
		if (i == len(st.gens) || st.gens[i].gen != cfg.Generation) && (i > 0 || len(st.gens) < keepGenerations) {
			e.track(st, i, cfg)
		}
		return
	}
	if st.cur == nil {
		e.heldStreams++
	} else {
		e.heldBytes -= int64(len(st.cur.Raw))
	}
	e.heldBytes += int64(len(cfg.Raw))
	st.cur = cfg
	e.metrics.StreamGeneration(st.name, cfg.Generation)
	e.track(st, i, cfg)
	delete(e.restoredConv, st.name)
	now := e.clock.Now()
	for _, m := range st.sinks {
		if m.w != nil {
			m.w.offer(cfg, now)
		}
	}
}

// track starts counting cfg's generation over the stream's sinks, at index
// i of its generations. e.mu is held.
func (e *Engine) track(st *stream, i int, cfg *config.Config) {
	g := &genTrack{gen: cfg.Generation, hash: cfg.Hash, accept: cfg.AcceptTime, labels: cfg.Labels}
	for _, m := range st.sinks {
		if m.appliedGen() >= g.gen {
			g.applied++
		}
	}
	if c, ok := e.restoredConv[st.name]; ok && c.Generation == g.gen {
		g.converge, g.counted = c.Time, true
	}
	st.gens = slices.Insert(st.gens, i, g)
	if n := len(st.gens) - keepGenerations; n > 0 {
		st.gens = slices.Delete(st.gens, 0, n)
	}
	// Sinks that have it already applied it before a restart.
	e.checkConverged(st, g, false)
	e.broker.PutGeneration(st.name, g.proto(len(st.sinks)))
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

// ValidateSink returns a normalised copy of spec (sinkspec.Checker): kind
// filled, stream defaulted, the kind's defaults applied. Errors wrap
// sink.ErrUnknownKind or sink.ErrInvalidSpec. It does not build the sink.
func (e *Engine) ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error) {
	s, _, err := e.specs.Normalise(spec)
	return s, err
}

// PutSink validates spec, builds the sink with its kind's factory and starts
// its worker. A sink of the same name is replaced (its worker stopped and the
// sink closed first) unless the normalised spec is unchanged. A new sink
// gets the stream's current generation at once. With an Ownership, a sink
// not owned here is kept as a peer; a change of ownership during the call
// is caught by deciding again once the sink is registered.
func (e *Engine) PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error) {
	norm, kind, err := e.specs.Normalise(spec)
	if err != nil {
		return nil, false, err
	}
	opts, err := sinkspec.Resolve(norm)
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
	out := proto.Clone(norm).(*confighubv1.Sink)

	e.mu.Lock()
	owned := e.own.OwnsSink(norm.GetName())
	old := e.sinks[norm.GetName()]
	if old != nil && (old.w != nil) == owned && proto.Equal(old.spec, norm) {
		e.mu.Unlock()
		return out, false, owned, nil
	}
	e.mu.Unlock()
	if !owned {
		if err := e.putPeer(norm, opts, kind, old); err != nil {
			return nil, false, owned, err
		}
		return out, old == nil, owned, nil
	}

	s, err := kind.Factory(proto.Clone(norm).(*confighubv1.Sink), sink.Deps{Logger: e.log.With("sink", norm.GetName(), "kind", norm.GetKind()), Clock: e.clock})
	if err != nil {
		if errors.Is(err, sink.ErrInvalidSpec) || errors.Is(err, sink.ErrUnknownKind) {
			return nil, false, owned, err // a factory names the sink (sink.Factory)
		}
		return nil, false, owned, fmt.Errorf("%w: sink %q: %w", sink.ErrInvalidSpec, norm.GetName(), err)
	}
	if old != nil && old.w != nil {
		// The new worker's first status replaces the old one, unless the
		// sink moves to another stream.
		e.removeWorker(old.w, old.st.name != norm.GetStream())
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
	if p := e.sinks[w.name]; p != nil {
		// Taken over from another replica: resume from its last status
		// when the store's record is older.
		e.unregister(p, p.st.name != w.st.name)
		seed = p.shared
	}
	e.addWorker(w, seed)
	e.mu.Unlock()
	e.log.Info("sink started", "sink", w.name, "kind", w.kind, "stream", w.st.name, "replaced", old != nil)
	return out, old == nil, owned, nil
}

// DeleteSink stops a sink's goroutines, closes it and removes its status.
func (e *Engine) DeleteSink(name string) error {
	defer e.logOwned()
	done, err := e.admin(name)
	if err != nil {
		return err
	}
	defer done()
	e.mu.Lock()
	m := e.sinks[name]
	if m != nil && m.w == nil {
		e.unregister(m, true)
		e.mu.Unlock()
		e.log.Info("sink deleted", "sink", name, "stream", m.st.name, "run_here", false)
		return nil
	}
	e.mu.Unlock()
	if m == nil {
		return fmt.Errorf("%w: %q", ErrSinkNotFound, name)
	}
	e.removeWorker(m.w, true)
	e.log.Info("sink deleted", "sink", name, "kind", m.w.kind, "stream", m.st.name)
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
		// Staleness alerts see no gap until the sink's next apply.
		e.metrics.LastSuccess(w.name, w.kind, w.lastAppliedTime)
	}
	if st.cur != nil {
		w.m.desired = st.cur // at once: no debounce
	}
	e.register(w.member)
	w.emit()
	e.wg.Add(1)
	go w.start()
}

// removeWorker unregisters w, stops its goroutines and closes its sink.
// w's name lock is held, e.mu is not.
func (e *Engine) removeWorker(w *worker, removeStatus bool) {
	e.mu.Lock()
	w.removed = true
	delete(w.st.waiters, w)
	e.unregister(w.member, removeStatus)
	e.mu.Unlock()
	w.cancel()
	<-w.done
	// Only once the worker is gone: an apply finishing meanwhile would
	// re-create the series.
	if removeStatus {
		e.metrics.SinkRemoved(w.name, w.kind)
	}
	closeSink(e.log, w.name, w.s)
}

// register counts m in the engine and its stream. e.mu is held.
func (e *Engine) register(m *member) {
	e.sinks[m.name] = m
	m.specSize = proto.Size(m.spec)
	e.specBytes += m.specSize
	m.st.sinks[m.name] = m
	m.st.waves[m.opts.Wave]++
	e.recount(m.st, 1, 0, m.appliedGen())
}

// unregister takes m out (and its status, with removeStatus). e.mu is held.
func (e *Engine) unregister(m *member, removeStatus bool) {
	delete(e.sinks, m.name)
	e.specBytes -= m.specSize
	delete(m.st.sinks, m.name)
	if m.st.waves[m.opts.Wave]--; m.st.waves[m.opts.Wave] == 0 {
		delete(m.st.waves, m.opts.Wave)
	}
	e.recount(m.st, -1, m.appliedGen(), 0)
	if removeStatus {
		e.broker.RemoveSink(m.st.name, m.name)
	}
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
	if st := e.streams[streamName]; st != nil {
		return len(st.sinks)
	}
	return 0
}

// Sink returns a copy of one sink's normalised spec (run here or not), nil
// if there is none.
func (e *Engine) Sink(name string) *confighubv1.Sink {
	e.mu.Lock()
	m := e.sinks[name]
	e.mu.Unlock()
	if m == nil {
		return nil
	}
	return proto.Clone(m.spec).(*confighubv1.Sink)
}

// HasSink tells whether a sink of that name exists (run here or not).
func (e *Engine) HasSink(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sinks[name] != nil
}

// SpecBytes is the encoded size of every sink's spec but except's, in O(1).
func (e *Engine) SpecBytes(except string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.sinks[except]; m != nil {
		return e.specBytes - m.specSize
	}
	return e.specBytes
}

// ListSinks returns the normalised specs of a stream's sinks ("" = all),
// sorted by name.
func (e *Engine) ListSinks(streamName string) []*confighubv1.Sink {
	e.mu.Lock()
	out := make([]*confighubv1.Sink, 0, len(e.sinks))
	for _, m := range e.sinks {
		if streamName == "" || m.st.name == streamName {
			out = append(out, m.spec)
		}
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	for i, s := range out {
		out[i] = proto.Clone(s).(*confighubv1.Sink)
	}
	return out
}

// Held is how many streams hold a configuration (here or, on replicas,
// pushed through another replica and followed here) and how many bytes
// those configurations hold.
func (e *Engine) Held() (streams int, bytes int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.heldStreams, e.heldBytes
}

// DeleteStream forgets a stream's configuration and status. It is refused
// with ErrStreamHasSinks, saying how many, while sinks (run here or not)
// read the stream; an unknown stream is no error.
func (e *Engine) DeleteStream(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.streams[name]
	if st == nil {
		return nil
	}
	if n := len(st.sinks); n > 0 {
		return fmt.Errorf("%w: %d sink(s) read stream %q", ErrStreamHasSinks, n, name)
	}
	if st.cur != nil {
		e.heldStreams--
		e.heldBytes -= int64(len(st.cur.Raw))
	}
	delete(e.streams, name)
	delete(e.restoredConv, name)
	delete(e.conv, name)
	e.metrics.StreamDeleted(name)
	e.broker.RemoveStream(name)
	return nil
}

// SinkTotal is how many sinks the engine knows, run here or not.
func (e *Engine) SinkTotal() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sinks)
}

// Streams returns the current configuration of every stream that holds
// one, sorted by stream name. The configurations are shared, not copied.
func (e *Engine) Streams() []*config.Config {
	e.mu.Lock()
	out := make([]*config.Config, 0, e.heldStreams)
	for _, st := range e.streams {
		if st.cur != nil {
			out = append(out, st.cur)
		}
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b *config.Config) int { return strings.Compare(a.Stream, b.Stream) })
	return out
}

// Status returns a consistent snapshot of a stream's status at one broker
// revision; false when the stream has neither a config nor a sink.
func (e *Engine) Status(streamName string) (*confighubv1.GetStatusResponse, bool) {
	return e.broker.Snapshot(streamName)
}

// Watch streams a stream's status (status.View): a snapshot or the changes
// after fromRevision, then every change; the engine never waits for a
// watcher. Messages are shared: read only.
func (e *Engine) Watch(ctx context.Context, streamName string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse {
	return e.broker.Watch(ctx, streamName, fromRevision)
}

// View is the engine's status broker as a status.View (the hub's status
// port on one node).
func (e *Engine) View() status.View { return e.broker }

// LastApplied returns the configuration a sink run here last applied (or
// found already applied by hash); a replica answers for peers from the
// shared status and the store (cluster.Diagnostics).
func (e *Engine) LastApplied(sinkName string) (*config.Config, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.sinks[sinkName]
	if m == nil || m.w == nil {
		return nil, false
	}
	if m.w.lastAppliedCfg != nil {
		return m.w.lastAppliedCfg, true
	}
	// Restored after a restart: the current config, when the hashes match.
	if h := m.w.m.appliedHash; h != "" && m.st.cur != nil && m.st.cur.Hash == h {
		return m.st.cur, true
	}
	return nil, false
}

// LastFailed returns the configuration and error (with the destination's
// raw Body) of the last failed apply of a sink run here.
func (e *Engine) LastFailed(sinkName string) (*config.Config, *sink.Error, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.sinks[sinkName]
	if m == nil || m.w == nil || m.w.lastFailedCfg == nil {
		return nil, nil, false
	}
	return m.w.lastFailedCfg, m.w.lastFailedErr, true
}

// Stop cancels every worker and runner, waits for their goroutines, closes
// the sinks and every status watcher. A second call waits for the first.
func (e *Engine) Stop() { e.stopOnce.Do(e.stop) }

func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.cancel()
	// PutSink and DeleteSink calls under way finish (closing what they
	// removed); after them the sinks no longer change.
	e.ops.Wait()
	e.wg.Wait()
	e.mu.Lock()
	var workers []*worker
	for _, m := range e.sinks {
		if m.w != nil {
			workers = append(workers, m.w)
		}
	}
	e.mu.Unlock()
	for _, w := range workers {
		closeSink(e.log, w.name, w.s)
	}
	if e.recorder != nil {
		e.flushConverged()
	}
	e.broker.Close()
}

// checkConverged sets a generation's converge time once every sink of the
// stream applied it; the stream's leader counts it. observed: the last
// apply is news, now; otherwise the sink that completed it joined with it
// applied (restored, or a peer's status), so it converged before and is
// not counted again. e.mu is held.
func (e *Engine) checkConverged(st *stream, g *genTrack, observed bool) {
	if !g.converge.IsZero() || len(st.sinks) == 0 || int(g.applied) < len(st.sinks) {
		return
	}
	if observed {
		g.converge = e.clock.Now()
	} else {
		// Without a record of it, the last known apply is the best estimate.
		g.converge = g.accept
		for _, m := range st.sinks {
			if t := m.lastApplied(); m.appliedGen() >= g.gen && t.After(g.converge) {
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
		e.log.Info("generation converged", "stream", st.name, "generation", g.gen, "sinks", len(st.sinks), "since_accept", d)
	} else {
		e.log.Info("generation had converged before the restart", "stream", st.name, "generation", g.gen, "sinks", len(st.sinks), "since_accept", d)
	}
	if e.recorder == nil {
		return
	}
	// Recorded off e.mu (a store write waits for the disk) by a goroutine
	// started with the first; the newest of a stream wins.
	e.conv[st.name] = store.Converged{Stream: st.name, Generation: g.gen, Time: g.converge}
	if !e.convRunning && !e.stopped {
		e.convRunning = true
		e.wg.Go(e.convergedWriter)
	}
	select {
	case e.convKick <- struct{}{}:
	default:
	}
}

// convergedWriter records the queued convergences until the engine stops;
// Stop records what is left.
func (e *Engine) convergedWriter() {
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

// recount updates the stream's generation counts for a sink that joins
// (total 1, applied cur), leaves (total -1, applied prev) or whose applied
// generation moved from prev to cur (a peer's may go back: its new owner
// re-seeded it), and wakes the gated workers. A joining sink completes a
// generation only with an apply from before it joined. e.mu is held.
func (e *Engine) recount(st *stream, total int, prev, cur uint64) {
	for _, g := range st.gens {
		d := b2i(cur >= g.gen) - b2i(prev >= g.gen)
		if total == 0 && d == 0 {
			continue
		}
		g.applied = uint32(int(g.applied) + d)
		e.checkConverged(st, g, total <= 0)
		e.broker.PutGeneration(st.name, g.proto(len(st.sinks)))
	}
	e.kickWaiters(st)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// kickWaiters wakes the workers whose gate may have changed. e.mu is held.
func (e *Engine) kickWaiters(st *stream) {
	for w := range st.waiters {
		w.wake()
		delete(st.waiters, w)
	}
}

func (g *genTrack) proto(total int) *confighubv1.GenerationStatus {
	p := &confighubv1.GenerationStatus{Generation: g.gen, Hash: g.hash, SinksApplied: g.applied, SinksTotal: uint32(total), Labels: g.labels}
	if !g.accept.IsZero() {
		p.AcceptTime = timestamppb.New(g.accept)
	}
	if !g.converge.IsZero() {
		p.ConvergeTime = timestamppb.New(g.converge)
	}
	return p
}

// scrubber returns what replaces spec's secret values (at least 4 bytes
// long, longest first) in a text, nil when it has none.
func (e *Engine) scrubber(spec *confighubv1.Sink) *strings.Replacer {
	if e.secrets == nil {
		return nil
	}
	vals := slices.DeleteFunc(e.secrets(spec), func(v string) bool { return len(v) < 4 })
	if len(vals) == 0 {
		return nil
	}
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, "<redacted>")
	}
	return strings.NewReplacer(pairs...)
}

// redactError returns a copy of se with its messages passed through the
// redactor and scrub (may be nil), and its raw body scrubbed.
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
	if se.Code != "" { // Error() prefixes the code; Message is kept without it
		out.Message = strings.TrimPrefix(out.Message, string(se.Code)+": ")
	}
	if scrub != nil && len(se.Body) > 0 {
		out.Body = []byte(scrub.Replace(string(se.Body)))
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
