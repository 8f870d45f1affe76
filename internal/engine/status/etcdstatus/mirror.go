package etcdstatus

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

const (
	retryWait       = 200 * time.Millisecond // before reading etcd again
	DefaultInterval = 100 * time.Millisecond // how often the writer writes the changed statuses
	txnBatch        = 100                    // operations per transaction (etcd's limit: 128)
)

// Option configures a Mirror or a Writer.
type Option func(*options)

type options struct {
	clock      clockwork.Clock
	log        *slog.Logger
	opTimeout  time.Duration
	interval   time.Duration
	brokerOpts []status.Option
	observer   Observer
	failures   Failures
}

func newOptions(opts []Option) options {
	o := options{clock: clockwork.NewRealClock(), log: slog.New(slog.DiscardHandler), opTimeout: 5 * time.Second, interval: DefaultInterval}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithClock sets the clock of retry waits and the writer's interval.
func WithClock(c clockwork.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithOpTimeout bounds each etcd read or write.
func WithOpTimeout(d time.Duration) Option {
	return func(o *options) { o.opTimeout = cmp.Or(max(d, 0), o.opTimeout) }
}

// WithInterval sets how often the writer writes.
func WithInterval(d time.Duration) Option {
	return func(o *options) { o.interval = cmp.Or(max(d, 0), o.interval) }
}

// WithBrokerOptions configures the mirror's broker (watch buffer, history).
func WithBrokerOptions(opts ...status.Option) Option {
	return func(o *options) { o.brokerOpts = append(o.brokerOpts, opts...) }
}

// Observer is told every status the mirror reads, in etcd order (st nil: removed).
type Observer interface {
	ObserveSink(name string, st *confighubv1.SinkStatus)
	ObserveGeneration(stream string, g *confighubv1.GenerationStatus)
}

// WithObserver sets the mirror's Observer.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }

// Mirror is a replica's status.View by etcd revisions; a lost watch is re-read as a gap.
type Mirror struct {
	status.View // the broker's Snapshot and Watch
	cli         *clientv3.Client
	keys        keys
	o           options
	b           *status.Broker

	mu    sync.Mutex
	etcd  int64         // newest etcd revision applied
	seen  chan struct{} // closed at each etcd revision applied
	sinks map[string]*confighubv1.SinkStatus
}

var _ status.View = (*Mirror)(nil)

// NewMirror returns the mirror of the status keys under prefix; Run starts it.
func NewMirror(cli *clientv3.Client, prefix string, opts ...Option) *Mirror {
	o := newOptions(opts)
	b := status.New(o.brokerOpts...)
	return &Mirror{View: b, cli: cli, keys: newKeys(prefix), o: o, b: b, seen: make(chan struct{}), sinks: map[string]*confighubv1.SinkStatus{}}
}

// Sink returns the newest status of a sink, nil if none.
func (m *Mirror) Sink(name string) *confighubv1.SinkStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sinks[name]
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
			case <-m.o.clock.After(retryWait):
			}
			continue
		}
		m.follow(ctx, rev)
	}
}

// relist reads every key and publishes what changed, as one gap.
func (m *Mirror) relist(ctx context.Context) (int64, error) {
	tctx, cancel := context.WithTimeout(ctx, m.o.opTimeout)
	resp, err := m.cli.Get(tctx, m.keys.all(), clientv3.WithPrefix())
	cancel()
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	m.mu.Lock()
	next := viewRev(rev, relistBase)
	if next <= m.b.Revision() {
		m.mu.Unlock()
		return rev, nil // nothing new since what was watched
	}
	// Every key as a watched change, then the deletion of the sinks gone.
	evs := make([]*clientv3.Event, 0, len(resp.Kvs))
	listed := map[string]bool{}
	for _, kv := range resp.Kvs {
		name, _, _ := m.keys.parse(string(kv.Key))
		listed[name] = true
		evs = append(evs, &clientv3.Event{Kv: kv})
	}
	for _, name := range slices.Sorted(maps.Keys(m.sinks)) {
		if !listed[name] {
			evs = append(evs, &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte(m.keys.sink(name))}})
		}
	}
	var notify []func()
	for _, ev := range evs {
		notify = append(notify, m.applyEvent(&next, ev)...)
	}
	m.b.GapAt(next)
	m.applied(rev)
	m.mu.Unlock()
	for _, f := range notify {
		f()
	}
	return rev, nil
}

// applied marks etcd revision rev applied. m.mu is held.
func (m *Mirror) applied(rev int64) {
	m.etcd = max(m.etcd, rev)
	close(m.seen)
	m.seen = make(chan struct{})
}

// applySink publishes a sink's status (nil: removed) at *rev; call the result off m.mu.
func (m *Mirror) applySink(rev *uint64, name string, st *confighubv1.SinkStatus) []func() {
	var out []func()
	obs := m.o.observer
	old := m.sinks[name]
	if old != nil && st != nil && proto.Equal(old, st) {
		return nil
	}
	if old != nil && (st == nil || old.GetStream() != st.GetStream()) {
		m.b.RemoveSinkAt(*rev, old.GetStream(), name)
		*rev = max(*rev+1, m.b.Revision()+1)
		delete(m.sinks, name)
		if obs != nil {
			out = append(out, func() { obs.ObserveSink(name, nil) })
		}
	}
	if st != nil {
		m.b.PutSinkAt(*rev, st)
		*rev = max(*rev+1, m.b.Revision()+1)
		m.sinks[name] = st
		if obs != nil {
			out = append(out, func() { obs.ObserveSink(name, st) })
		}
	}
	return out
}

// follow applies the watched changes after rev until the watch fails.
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
				cur, next = ev.Kv.ModRevision, viewRev(ev.Kv.ModRevision, 0)
			}
			if next <= m.b.Revision() {
				next++
				continue // already in a re-read
			}
			notify = append(notify, m.applyEvent(&next, ev)...)
		}
		m.applied(wr.Header.Revision)
		m.mu.Unlock()
		for _, f := range notify {
			f()
		}
	}
}

// applyEvent publishes one change at *rev, advancing it past what it released. m.mu is held.
func (m *Mirror) applyEvent(rev *uint64, ev *clientv3.Event) []func() {
	start := *rev
	defer func() { *rev = max(*rev, start+1, m.b.Revision()+1) }()
	name, stream, ok := m.keys.parse(string(ev.Kv.Key))
	switch {
	case !ok:
	case name != "" && ev.Type == clientv3.EventTypeDelete:
		return m.applySink(rev, name, nil)
	case name != "":
		if st := decode[confighubv1.SinkStatus](m.o.log, ev.Kv.Value, "sink"); st != nil {
			return m.applySink(rev, name, st)
		}
	case ev.Type != clientv3.EventTypeDelete:
		if g := decode[confighubv1.GenerationStatus](m.o.log, ev.Kv.Value, "generation"); g != nil {
			m.b.PutGenerationAt(*rev, stream, g)
			*rev++
			if obs := m.o.observer; obs != nil {
				return []func(){func() { obs.ObserveGeneration(stream, g) }}
			}
		}
	}
	return nil
}

// decode unmarshals a status read from etcd; nil (logged) on error.
func decode[T any, P interface {
	*T
	proto.Message
}](log *slog.Logger, b []byte, what string) P {
	v := P(new(T))
	if err := proto.Unmarshal(b, v); err != nil {
		log.Warn("status view: undecodable "+what+" status in etcd", "error", err)
		return nil
	}
	return v
}
