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

const (
	DefaultMaxConcurrentApplies = 64                   // applies in flight per pool (gateways, others)
	DefaultStatusDispatchWindow = 5 * time.Millisecond // how long a status change waits for its round
)

var (
	ErrSinkNotFound   = errors.New("sink not found")   // an unknown sink name
	ErrStopped        = errors.New("engine stopped")   // PutSink and DeleteSink after Stop
	ErrStreamHasSinks = errors.New("stream has sinks") // DeleteStream while sinks read the stream
)

// Recorder stores what a sink applied and when a generation converged.
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

// WithMessageRedactor cleans a sink's error texts (not its raw body).
func WithMessageRedactor(f func(string) string) Option { return func(e *Engine) { e.redactMsg = f } }

// WithSecretValues finds a spec's secrets, redacted in its sink's errors and reports.
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

// WithStatusDispatchWindow sets the status batching window (real time; 0: none).
func WithStatusDispatchWindow(d time.Duration) Option {
	return func(e *Engine) { e.brokerOpts = append(e.brokerOpts, status.WithDispatchWindow(d)) }
}

// WithNewStream sets a func called per new stream under the lock; it must not call e.
func WithNewStream(fn func(stream string)) Option { return func(e *Engine) { e.newStream = fn } }

// Engine fans each stream's newest configuration out to its sinks (package doc).
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

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	ops      sync.WaitGroup // PutSink and DeleteSink calls under way
	stopOnce sync.Once

	mu sync.Mutex
	// Gateway sinks have their own pool: a hung Konnect holds no gateway's slot.
	gatewaySlots, slots *slotPool
	streams             map[string]*stream
	sinks               map[string]*member                 // run here or by another replica
	remote              map[string]*confighubv1.SinkStatus // newest shared status (ObserveSink)
	restored            map[string]store.Applied
	restoredConv        map[string]store.Converged // by stream, until Publish
	conv                map[string]store.Converged // not yet recorded, by stream
	convKick            chan struct{}
	convRunning         bool
	specBytes           int                  // sum of the specs' sizes
	ownedLogged         string               // the sinks run here, as last logged
	names               map[string]*nameLock // admin locks: a stuck sink holds up its own name only
	stopped             bool
	heldStreams         int   // streams holding a configuration
	heldBytes           int64 // their Raw bytes
}

// nameLock is one sink name's admin lock, dropped when refs is 0.
type nameLock struct {
	mu   sync.Mutex
	refs int
}

// admin holds name's lock (ErrStopped after Stop) until done is called.
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
	name    string
	cur     *config.Config
	sinks   map[string]*member
	waves   map[uint32]int // sinks per wave: a wave-0 gate is O(1)
	gens    []*genTrack    // ascending
	waiters map[*worker]struct{}
}

// genTrack counts the sinks that applied one generation.
type genTrack struct {
	gen      uint64
	hash     string
	accept   time.Time
	labels   map[string]string
	applied  uint32
	converge time.Time
	counted  bool // by the leader
	unled    bool // seen here unled (Reown counts it)
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
	// Revisions start at the clock's nanoseconds, fresh across restarts.
	e.broker = status.New(append([]status.Option{status.WithFirstRevision(uint64(max(e.clock.Now().UnixNano(), 0))),
		status.WithDispatchWindow(DefaultStatusDispatchWindow)}, e.brokerOpts...)...)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

// stream returns the named stream, made on first use.
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

// Restore seeds the sinks' applied generation and hash (before PutSink).
func (e *Engine) Restore(applied []store.Applied) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range applied {
		e.restored[a.Sink] = a
	}
}

// RestoreConverged seeds recorded convergence times (before Publish).
func (e *Engine) RestoreConverged(cs []store.Converged) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range cs {
		e.restoredConv[c.Stream] = c
	}
}

// Publish makes cfg its stream's newest config, offered without waiting; an older one is tracked.
func (e *Engine) Publish(cfg *config.Config) {
	if cfg == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stream(cfg.Stream)
	i := sort.Search(len(st.gens), func(i int) bool { return st.gens[i].gen >= cfg.Generation })
	if st.cur != nil && cfg.Generation <= st.cur.Generation {
		if (i == len(st.gens) || st.gens[i].gen != cfg.Generation) && (i > 0 || len(st.gens) < status.Generations) {
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

// track starts counting cfg's generation at index i. e.mu is held.
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
	if n := len(st.gens) - status.Generations; n > 0 {
		st.gens = slices.Delete(st.gens, 0, n)
	}
	e.checkConverged(st, g, false) // applied before a restart
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

// ValidateSink normalises a copy of spec (errors: sink.ErrUnknownKind, ErrInvalidSpec).
func (e *Engine) ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error) {
	s, _, err := e.specs.Normalise(spec)
	return s, err
}

// PutSink validates spec, builds the sink and starts its worker (a peer if not
// owned here), replacing one of that name unless its spec is unchanged.
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
		e.removeWorker(old.w, old.st.name != norm.GetStream())
	}
	caps := s.Describe() // no sink method runs under e.mu
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		closeSink(e.log, norm.GetName(), s)
		return nil, false, owned, ErrStopped
	}
	w := newWorker(e, norm, opts, s, caps)
	var seed *confighubv1.SinkStatus
	if p := e.sinks[w.name]; p != nil { // taken over from another replica
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

// addWorker starts w from its newest known apply (restored or seed). e.mu is held.
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
		e.metrics.LastSuccess(w.name, w.kind, w.lastAppliedTime)
	}
	if st.cur != nil {
		w.m.desired = st.cur // at once: no debounce
	}
	e.register(w.member)
	w.emit()
	if r, ok := w.s.(sink.Runner); ok {
		w.goRun(func() { w.runRunner(r) })
	}
	w.wake()
}

// removeWorker stops w and closes its sink; its name lock is held, e.mu not.
func (e *Engine) removeWorker(w *worker, removeStatus bool) {
	e.mu.Lock()
	w.removed = true
	delete(w.st.waiters, w)
	e.unregister(w.member, removeStatus)
	e.mu.Unlock()
	w.cancel()
	w.active.Wait() // an apply finishing meanwhile would re-create the series
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

// Sink returns a copy of a sink's normalised spec, nil if none.
func (e *Engine) Sink(name string) *confighubv1.Sink {
	e.mu.Lock()
	m := e.sinks[name]
	e.mu.Unlock()
	if m == nil {
		return nil
	}
	return proto.Clone(m.spec).(*confighubv1.Sink)
}

// HasSink tells whether a sink of that name exists.
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

// ListSinks returns copies of a stream's sink specs ("" = all), by name.
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

// Held is how many streams hold a configuration, and its bytes in all.
func (e *Engine) Held() (streams int, bytes int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.heldStreams, e.heldBytes
}

// DeleteStream forgets a stream's configuration and status; ErrStreamHasSinks while sinks read it.
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

// Streams returns every stream's current configuration (shared), by name.
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

// View is the engine's status broker.
func (e *Engine) View() status.View { return e.broker }

// LastApplied returns the configuration a sink run here last applied or skipped to.
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
	if h := m.w.m.appliedHash; h != "" && m.st.cur != nil && m.st.cur.Hash == h {
		return m.st.cur, true
	}
	return nil, false
}

// LastFailed returns the configuration and error of a sink's last failed apply.
func (e *Engine) LastFailed(sinkName string) (*config.Config, *sink.Error, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.sinks[sinkName]
	if m == nil || m.w == nil || m.w.lastFailedCfg == nil {
		return nil, nil, false
	}
	return m.w.lastFailedCfg, m.w.lastFailedErr, true
}

// Stop stops every goroutine, closes the sinks and the status watchers.
func (e *Engine) Stop() { e.stopOnce.Do(e.stop) }
func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.cancel()
	e.ops.Wait() // then the sinks no longer change
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

// checkConverged sets g's converge time once every sink applied it: now
// when observed, else the last known apply (it converged before). e.mu is held.
func (e *Engine) checkConverged(st *stream, g *genTrack, observed bool) {
	if !g.converge.IsZero() || len(st.sinks) == 0 || int(g.applied) < len(st.sinks) {
		return
	}
	if observed {
		g.converge = e.clock.Now()
	} else {
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

// countConverged counts g's convergence on the stream's leader. e.mu is held.
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
	// Recorded off e.mu by convergedWriter; the newest of a stream wins.
	e.conv[st.name] = store.Converged{Stream: st.name, Generation: g.gen, Time: g.converge}
	if !e.convRunning && !e.stopped {
		e.convRunning = true
		e.wg.Go(e.convergedWriter)
	}
	kick(e.convKick)
}

// convergedWriter records queued convergences until Stop, which flushes the rest.
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

// recount counts a sink joining (total 1), leaving (-1) or moving. e.mu is held.
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

// kickWaiters wakes the gated workers. e.mu is held.
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

// scrubber replaces spec's secrets of 4 bytes or more, nil when none.
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

// redactError returns se with its texts redacted and scrubbed, its body scrubbed.
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
