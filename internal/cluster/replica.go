package cluster

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/engine/status/etcdstatus"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// Defaults of the Replica's options.
const (
	DefaultOpTimeout = 2 * time.Second
	// probeInterval is how often etcd's reachability is checked.
	probeInterval = 500 * time.Millisecond
)

// Engine is what a replica drives: the local engine.Engine.
type Engine interface {
	Publish(cfg *config.Config)
	PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error)
	DeleteSink(name string) error
	ListSinks(stream string) []*confighubv1.Sink
	Restore(applied []store.Applied)
	Reown(names ...string) map[string]error
	ObserveSink(name string, st *confighubv1.SinkStatus)
	ObserveGeneration(stream string, g *confighubv1.GenerationStatus)
	LastFailed(sinkName string) (*config.Config, *sink.Error, bool) // copied to etcd
	View() status.View                                              // watched by the etcd writer
	Sink(name string) *confighubv1.Sink
}

// Store is what a replica needs of the shared (etcd) store.
type Store interface {
	Watch(ctx context.Context) <-chan store.Event
	ListStreams(ctx context.Context) ([]*config.Config, error)
	ListSinks(ctx context.Context) ([]*confighubv1.Sink, error)
	ListApplied(ctx context.Context) ([]store.Applied, error)
	GetGeneration(ctx context.Context, stream string, gen uint64) (*config.Config, error)
	PutSink(ctx context.Context, s *confighubv1.Sink) error
	DeleteSink(ctx context.Context, name string) error
}

// Options configure a Replica; zero values take the defaults.
type Options struct {
	Logger    *slog.Logger
	OpTimeout time.Duration       // bounds each etcd call, the readiness probe's too
	Ready     func(ready bool)    // told when etcd becomes reachable or unreachable
	Status    []etcdstatus.Option // of the status writer and mirror
}

// Replica runs this hub as one of several sharing etcd (package doc).
type Replica struct {
	eng    Engine
	st     Store
	cli    *clientv3.Client
	prefix string
	mem    *Membership
	writer *etcdstatus.Writer
	mirror *etcdstatus.Mirror
	clock  clockwork.Clock
	log    *slog.Logger

	opTimeout time.Duration
	onReady   func(bool)

	place *Placement

	ready atomic.Bool
	owned atomic.Value // the last logged member set
}

// Placement is the engine's ownership predicate on a replica: a data plane's
// sink runs where its claim says, any other sink and stream on its Owner. It
// places nothing until the replica registered and read the claims.
type Placement struct {
	id       string
	mu       sync.Mutex
	members  []string
	member   bool // registered
	stopping bool
	claims   map[string]claim
	listed   bool // the claims were read
}

// NewPlacement returns the placement of replica id.
func NewPlacement(id string) *Placement { return &Placement{id: id, claims: map[string]claim{}} }

var _ engine.Ownership = (*Placement)(nil)

// OwnsSink says whether this replica runs a sink.
func (p *Placement) OwnsSink(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.placing() && p.sinkOwner(name) == p.id
}

// OwnsStream says whether this replica leads a stream (its generation statuses).
func (p *Placement) OwnsStream(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.placing() && Owner("stream/"+name, p.members) == p.id
}

// OwnerOf names the replica that runs a sink ("" when not placing now).
func (p *Placement) OwnerOf(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.placing() {
		return ""
	}
	return p.sinkOwner(name)
}

func (p *Placement) placing() bool { return p.member && p.listed && !p.stopping }

func (p *Placement) sinkOwner(name string) string {
	if c := p.claims[name]; c.owner != "" {
		return c.owner
	}
	return Owner("sink/"+name, p.members)
}

func (p *Placement) set(members []string, registered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members, p.member = members, registered
}

func (p *Placement) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopping = true
}

// New returns the replica of mem driving eng placed by place, following st (status under prefix).
func New(eng Engine, place *Placement, st Store, cli *clientv3.Client, mem *Membership, prefix string, o Options) *Replica {
	r := &Replica{
		eng: eng, place: place, st: st, cli: cli, mem: mem, prefix: strings.TrimSuffix(prefix, "/"),
		clock: clockwork.NewRealClock(), log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)),
		opTimeout: cmp.Or(max(o.OpTimeout, 0), DefaultOpTimeout), onReady: o.Ready,
	}
	r.ready.Store(true)
	if r.onReady == nil {
		r.onReady = func(bool) {}
	}
	common := append([]etcdstatus.Option{etcdstatus.WithLogger(r.log), etcdstatus.WithOpTimeout(r.opTimeout), etcdstatus.WithClock(r.clock)}, o.Status...)
	r.writer = etcdstatus.NewWriter(cli, prefix, eng.View(), place, mem, append(common, etcdstatus.WithFailures(eng))...)
	r.mirror = etcdstatus.NewMirror(cli, prefix, append(common, etcdstatus.WithObserver(eng))...)
	return r
}

// View is the status view of every sink of every replica (etcd).
func (r *Replica) View() status.View { return r.mirror }

// Diagnostics answers GetConfig of a sink the same on every replica (status, etcd, store).
func (r *Replica) Diagnostics() *Diagnostics { return &Diagnostics{r: r} }

// Diagnostics is a replica's GetConfig source.
type Diagnostics struct{ r *Replica }

// LastApplied is the generation the sink's shared status says it applied
// whole, from the store; false when none, no longer kept or unreadable.
func (d *Diagnostics) LastApplied(sinkName string) (*config.Config, bool) {
	r := d.r
	st := r.mirror.Sink(sinkName)
	if st.GetAppliedGeneration() == 0 {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	cfg, err := r.st.GetGeneration(ctx, st.GetStream(), st.GetAppliedGeneration())
	if err != nil {
		r.log.Info("cluster: a sink's applied configuration is not readable", "sink", sinkName, "stream", st.GetStream(), "generation", st.GetAppliedGeneration(), "error", err)
		return nil, false
	}
	// A DEGRADED sink's applied_hash is its fallback's.
	if st.GetFallbackGeneration() == 0 && cfg.Hash != st.GetAppliedHash() {
		return nil, false
	}
	return cfg, true
}

// LastFailed is the sink's failed record in etcd with its generation from
// the store; false when none, no longer kept or unreadable (logged).
func (d *Diagnostics) LastFailed(sinkName string) (*config.Config, *sink.Error, bool) {
	r := d.r
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	f, err := r.mirror.LastFailed(ctx, sinkName)
	if err != nil {
		r.log.Warn("cluster: reading a sink's failed record failed", "sink", sinkName, "error", err)
		return nil, nil, false
	}
	if f == nil {
		return nil, nil, false
	}
	cfg, err := r.st.GetGeneration(ctx, f.Stream, f.Generation)
	if err != nil || cfg.Hash != f.Hash {
		r.log.Info("cluster: a sink's failed configuration is not readable", "sink", sinkName, "stream", f.Stream, "generation", f.Generation, "error", err)
		return nil, nil, false
	}
	return cfg, f.Err, true
}

// Ready says whether etcd answered the last probe.
func (r *Replica) Ready() bool {
	return r.ready.Load()
}

// Run follows the store, the members and etcd until ctx ends, then leaves.
func (r *Replica) Run(ctx context.Context) {
	var wg sync.WaitGroup
	mctx, mcancel := context.WithCancel(context.WithoutCancel(ctx))
	wg.Go(func() { r.mem.Run(mctx) })
	wg.Go(func() { r.mirror.Run(ctx) })
	wg.Go(func() { r.writer.Run(ctx) })
	wg.Go(func() { r.followStore(ctx) })
	wg.Go(func() { r.followMembers(ctx) })
	wg.Go(func() { r.followClaims(ctx) })
	wg.Go(func() { r.probe(ctx) })
	<-ctx.Done()
	r.place.stop()
	r.reown(context.WithoutCancel(ctx))
	mcancel()
	wg.Wait()
	r.mirror.Close()
}

// probe checks etcd with a linearizable read, telling onReady every change.
func (r *Replica) probe(ctx context.Context) {
	for {
		tctx, cancel := context.WithTimeout(ctx, r.opTimeout)
		_, err := r.cli.Get(tctx, r.mem.Key(), clientv3.WithCountOnly())
		cancel()
		if ctx.Err() != nil {
			return
		}
		ok := err == nil
		if r.ready.Swap(ok) != ok {
			if ok {
				r.log.Info("cluster: etcd reachable again; serving")
			} else {
				r.log.Warn("cluster: etcd unreachable; not serving", "error", err)
			}
			r.onReady(ok)
		}
		if !r.wait(ctx) {
			return
		}
	}
}

// wait waits probeInterval; false when ctx ended.
func (r *Replica) wait(ctx context.Context) bool { return sleep(ctx, r.clock, probeInterval) }

// followMembers re-places the sinks at every membership change.
func (r *Replica) followMembers(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.mem.Changes():
			r.reown(ctx)
		}
	}
}

// reown places by the current members, seeding the engine with the stored applied records.
func (r *Replica) reown(ctx context.Context) {
	members, registered := r.mem.Members()
	r.place.set(members, registered)
	if registered && ctx.Err() == nil {
		tctx, cancel := context.WithTimeout(ctx, r.opTimeout)
		applied, err := r.st.ListApplied(tctx)
		cancel()
		if err != nil {
			r.log.Warn("cluster: reading applied records failed; sinks taken over resume from their shared status", "error", err)
		} else {
			r.eng.Restore(applied)
		}
	}
	r.eng.Reown()
	r.logMembers(members, registered)
}

// logMembers logs the member set when it changed.
func (r *Replica) logMembers(members []string, registered bool) {
	line := fmt.Sprint(registered, members)
	if r.owned.Swap(line) != any(line) {
		r.log.Info("cluster: members", "registered", registered, "members", strings.Join(members, ","))
	}
}

// followStore applies the store's changes made by any replica to the engine.
func (r *Replica) followStore(ctx context.Context) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		ch := r.st.Watch(wctx)
		// List after the watch started: the events that follow are applied
		// on top of the listing, so none is missed.
		if err := r.resync(ctx); err != nil {
			cancel()
			r.log.Warn("cluster: reading the store failed; retrying", "error", err)
			if !r.wait(ctx) {
				return
			}
			continue
		}
		for ev := range ch {
			r.apply(ctx, ev)
		}
		cancel()
		if ctx.Err() == nil {
			r.log.Warn("cluster: store watch ended; watching again")
			if !r.wait(ctx) {
				return
			}
		}
	}
}

func (r *Replica) resync(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	streams, err := r.st.ListStreams(tctx)
	if err != nil {
		return fmt.Errorf("list streams: %w", err)
	}
	sinks, err := r.st.ListSinks(tctx)
	if err != nil {
		return fmt.Errorf("list sinks: %w", err)
	}
	for _, s := range streams {
		r.eng.Publish(s)
	}
	stored := map[string]bool{}
	for _, s := range sinks {
		stored[s.GetName()] = true
		r.putSink(s)
	}
	for _, s := range r.eng.ListSinks("") {
		if !stored[s.GetName()] {
			r.deleteSink(ctx, s.GetName())
		}
	}
	return nil
}

func (r *Replica) apply(ctx context.Context, ev store.Event) {
	switch {
	case ev.Config != nil:
		r.eng.Publish(ev.Config)
	case ev.SinkPut != nil:
		r.putSink(ev.SinkPut)
	case ev.SinkDeleted != "":
		r.deleteSink(ctx, ev.SinkDeleted)
	}
}

func (r *Replica) putSink(s *confighubv1.Sink) {
	if _, _, err := r.eng.PutSink(s); err != nil {
		r.log.Error("cluster: a stored sink was not taken", "sink", s.GetName(), "error", err)
	}
}

// deleteSink forgets a sink and removes its status key (its owner may be gone).
func (r *Replica) deleteSink(ctx context.Context, name string) {
	_ = r.eng.DeleteSink(name) // not known here: nothing to stop
	tctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	if err := r.writer.Remove(tctx, name); err != nil {
		r.log.Warn("cluster: deleting a sink's status failed", "sink", name, "error", err)
	}
}

// Follow has the writer copy a stream's statuses; the engine calls it for
// every stream (engine.WithNewStream): the store's Watch skips own writes.
func (r *Replica) Follow(stream string) { r.writer.Follow(stream) }
