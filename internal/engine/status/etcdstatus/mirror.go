package etcdstatus

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

// DefaultRetry is how long the mirror waits before reading etcd again after
// a failure.
const DefaultRetry = 200 * time.Millisecond

// Option configures a Mirror or a Writer.
type Option func(*options)

type options struct {
	clock       clockwork.Clock
	log         *slog.Logger
	retry       time.Duration
	opTimeout   time.Duration
	interval    time.Duration
	brokerOpts  []status.Option
	onSink      func(stream, sink string, st *confighubv1.SinkStatus)
	onGen       func(stream string, g *confighubv1.GenerationStatus)
	keepGens    int
	leaseHolder Leaser
	failures    Failures
}

func newOptions(opts []Option) options {
	o := options{clock: clockwork.NewRealClock(), log: slog.New(slog.DiscardHandler), retry: DefaultRetry,
		opTimeout: 5 * time.Second, interval: DefaultInterval, keepGens: status.DefaultGenerations}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithClock sets the clock of the retry waits and of the writer's interval.
func WithClock(c clockwork.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithOpTimeout bounds each etcd read or write.
func WithOpTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.opTimeout = d
		}
	}
}

// WithBrokerOptions configures the mirror's broker (watch buffer, history).
func WithBrokerOptions(opts ...status.Option) Option {
	return func(o *options) { o.brokerOpts = append(o.brokerOpts, opts...) }
}

// WithOnSink makes the mirror call fn with every sink status it reads (st
// nil: the sink's status was removed), in etcd order, from its goroutine:
// the engine of a replica learns there what the sinks it does not run
// have done (gates, generation counts).
func WithOnSink(fn func(stream, sink string, st *confighubv1.SinkStatus)) Option {
	return func(o *options) { o.onSink = fn }
}

// WithOnGeneration makes the mirror call fn with every generation status
// it reads, in etcd order, from its goroutine: the engine of a replica that
// does not lead the stream takes the leader's convergence time there, so
// the time stays the same when another replica takes the lead.
func WithOnGeneration(fn func(stream string, g *confighubv1.GenerationStatus)) Option {
	return func(o *options) { o.onGen = fn }
}

// Mirror is the status.View of a replica: it follows every status key
// under the prefix and serves them through a status.Broker numbered with
// etcd revisions (see viewRev), so GetStatus and WatchStatus answer the same
// on every replica and a watch resumes on any replica. A lost etcd watch
// (compaction, etcd restart) is followed by a fresh read of the keys; the
// changes found are published and a watcher that has not seen them gets a
// snapshot with reason "resume-gap".
type Mirror struct {
	cli  *clientv3.Client
	keys keys
	o    options
	b    *status.Broker

	mu    sync.Mutex
	etcd  int64 // newest etcd revision applied
	seen  chan struct{}
	sinks map[string]*confighubv1.SinkStatus                  // by sink name
	gens  map[string]map[uint64]*confighubv1.GenerationStatus // stream -> generation -> newest
}

var _ status.View = (*Mirror)(nil)

// NewMirror returns the mirror of the status keys under prefix; Run starts
// it.
func NewMirror(cli *clientv3.Client, prefix string, opts ...Option) *Mirror {
	o := newOptions(opts)
	return &Mirror{cli: cli, keys: newKeys(prefix), o: o, b: status.New(o.brokerOpts...),
		seen: make(chan struct{}), sinks: map[string]*confighubv1.SinkStatus{}, gens: map[string]map[uint64]*confighubv1.GenerationStatus{}}
}

// Snapshot is the stream's status at the mirror's revision.
func (m *Mirror) Snapshot(stream string) (*confighubv1.GetStatusResponse, bool) {
	return m.b.Snapshot(stream)
}

// Watch streams the stream's status (see status.View).
func (m *Mirror) Watch(ctx context.Context, stream string, from uint64) <-chan *confighubv1.WatchStatusResponse {
	return m.b.Watch(ctx, stream, from)
}

// Sink returns the newest status of a sink, nil if none.
func (m *Mirror) Sink(name string) *confighubv1.SinkStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sinks[name]
}

// WaitRevision returns once the mirror applied etcd revision rev (or
// later), or ctx ended.
func (m *Mirror) WaitRevision(ctx context.Context, rev int64) error {
	return waitUntil(ctx, func() (bool, <-chan struct{}) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.etcd >= rev, m.seen
	})
}

// waitUntil returns once check says done, checking again each time the
// channel it returned is closed, or when ctx ends.
func waitUntil(ctx context.Context, check func() (bool, <-chan struct{})) error {
	for {
		done, ch := check()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Close ends every watch; call it after Run returned.
func (m *Mirror) Close() { m.b.Close() }

// Run follows the keys until ctx ends.
func (m *Mirror) Run(ctx context.Context) {
	for ctx.Err() == nil {
		rev, err := m.relist(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.o.log.Warn("status view: reading etcd failed; retrying", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-m.o.clock.After(m.o.retry):
			}
			continue
		}
		m.follow(ctx, rev)
	}
}

// relist reads every key and publishes the difference with what the mirror
// had, as one gap.
func (m *Mirror) relist(ctx context.Context) (int64, error) {
	tctx, cancel := context.WithTimeout(ctx, m.o.opTimeout)
	resp, err := m.cli.Get(tctx, m.keys.all(), clientv3.WithPrefix())
	cancel()
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	sinks := map[string]*confighubv1.SinkStatus{}
	type genKey struct {
		stream string
		gen    uint64
	}
	var gens []genKey
	genVals := map[genKey]*confighubv1.GenerationStatus{}
	for _, kv := range resp.Kvs {
		name, stream, gen, ok := m.keys.parse(string(kv.Key))
		switch {
		case !ok:
		case name != "":
			if st := m.decodeSink(kv.Value); st != nil {
				sinks[name] = st
			}
		default:
			if g := m.decodeGen(kv.Value); g != nil {
				k := genKey{stream, gen}
				gens = append(gens, k)
				genVals[k] = g
			}
		}
	}
	m.mu.Lock()
	next := viewRev(rev, relistBase)
	if next <= m.b.Revision() {
		m.mu.Unlock()
		return rev, nil // nothing new since what was watched
	}
	var notify []func()
	names := make([]string, 0, len(m.sinks)+len(sinks))
	for name := range m.sinks {
		names = append(names, name)
	}
	for name := range sinks {
		if m.sinks[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		old, cur := m.sinks[name], sinks[name]
		if cur != nil && old != nil && proto.Equal(old, cur) {
			continue
		}
		notify = append(notify, m.applySink(&next, name, cur)...)
	}
	for _, k := range gens {
		if old := m.gens[k.stream][k.gen]; old != nil && proto.Equal(old, genVals[k]) {
			continue
		}
		notify = append(notify, m.applyGen(&next, k.stream, k.gen, genVals[k]))
	}
	m.b.GapAt(next)
	m.etcd = max(m.etcd, rev)
	close(m.seen)
	m.seen = make(chan struct{})
	m.mu.Unlock()
	for _, f := range notify {
		f()
	}
	return rev, nil
}

// applySink publishes a sink's new status (nil: removed) at *rev and
// advances it. m.mu is held; the returned calls are made without it.
func (m *Mirror) applySink(rev *uint64, name string, st *confighubv1.SinkStatus) []func() {
	var out []func()
	old := m.sinks[name]
	if old != nil && (st == nil || old.GetStream() != st.GetStream()) {
		m.b.RemoveSinkAt(*rev, old.GetStream(), name)
		*rev = max(*rev+1, m.b.Revision()+1)
		delete(m.sinks, name)
		out = append(out, m.notify(old.GetStream(), name, nil))
	}
	if st != nil {
		m.b.PutSinkAt(*rev, st)
		*rev = max(*rev+1, m.b.Revision()+1)
		m.sinks[name] = st
		out = append(out, m.notify(st.GetStream(), name, st))
	}
	return out
}

func (m *Mirror) applyGen(rev *uint64, stream string, gen uint64, g *confighubv1.GenerationStatus) func() {
	m.b.PutGenerationAt(*rev, stream, g)
	*rev++
	known := m.gens[stream]
	if known == nil {
		known = map[uint64]*confighubv1.GenerationStatus{}
		m.gens[stream] = known
	}
	known[gen] = g
	if len(known) > 2*m.o.keepGens {
		// Keep the memory bounded: the oldest half is gone from the broker.
		var all []uint64
		for k := range known {
			all = append(all, k)
		}
		slices.Sort(all)
		for _, k := range all[:len(all)-m.o.keepGens] {
			delete(known, k)
		}
	}
	if fn := m.o.onGen; fn != nil {
		return func() { fn(stream, g) }
	}
	return func() {}
}

func (m *Mirror) notify(stream, name string, st *confighubv1.SinkStatus) func() {
	fn := m.o.onSink
	if fn == nil {
		return func() {}
	}
	return func() { fn(stream, name, st) }
}

// follow applies the watched changes after rev until the watch fails or
// ctx ends.
func (m *Mirror) follow(ctx context.Context, rev int64) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range m.cli.Watch(wctx, m.keys.all(), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			m.o.log.Warn("status view: etcd watch failed; reading the keys again", "error", err)
			return
		}
		var notify []func()
		m.mu.Lock()
		var (
			cur  int64
			next uint64
		)
		for _, ev := range wr.Events {
			if ev.Kv.ModRevision != cur {
				// The changes of one etcd revision are numbered in order,
				// the same on every replica.
				cur, next = ev.Kv.ModRevision, viewRev(ev.Kv.ModRevision, 0)
			}
			if next <= m.b.Revision() {
				next++
				continue // already in a re-read
			}
			notify = append(notify, m.applyEvent(&next, ev)...)
		}
		if wr.Header.Revision > m.etcd {
			m.etcd = wr.Header.Revision
		}
		close(m.seen)
		m.seen = make(chan struct{})
		m.mu.Unlock()
		for _, f := range notify {
			f()
		}
	}
}

// applyEvent publishes one watched change at *rev and advances it (by one
// at least). m.mu is held.
func (m *Mirror) applyEvent(rev *uint64, ev *clientv3.Event) []func() {
	start := *rev
	// A sink change may release a held generation change at the next
	// revision (status.Broker.PutGeneration); every replica does the same.
	defer func() { *rev = max(*rev, start+1, m.b.Revision()+1) }()
	name, stream, gen, ok := m.keys.parse(string(ev.Kv.Key))
	switch {
	case !ok:
	case name != "":
		if ev.Type == clientv3.EventTypeDelete {
			if m.sinks[name] == nil {
				return nil
			}
			return m.applySink(rev, name, nil)
		}
		if st := m.decodeSink(ev.Kv.Value); st != nil {
			return m.applySink(rev, name, st)
		}
	case ev.Type != clientv3.EventTypeDelete:
		if g := m.decodeGen(ev.Kv.Value); g != nil {
			return []func(){m.applyGen(rev, stream, gen, g)}
		}
	}
	return nil
}

func (m *Mirror) decodeSink(b []byte) *confighubv1.SinkStatus {
	st := &confighubv1.SinkStatus{}
	if err := proto.Unmarshal(b, st); err != nil {
		m.o.log.Warn("status view: undecodable sink status in etcd", "error", err)
		return nil
	}
	return st
}

func (m *Mirror) decodeGen(b []byte) *confighubv1.GenerationStatus {
	g := &confighubv1.GenerationStatus{}
	if err := proto.Unmarshal(b, g); err != nil {
		m.o.log.Warn("status view: undecodable generation status in etcd", "error", err)
		return nil
	}
	return g
}
