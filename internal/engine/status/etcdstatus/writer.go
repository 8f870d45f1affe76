package etcdstatus

import (
	"context"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/engine/status"
)

// DefaultInterval is how often the writer writes the changed statuses.
const DefaultInterval = 100 * time.Millisecond

// txnBatch bounds the operations of one transaction (etcd's default limit
// is 128 per transaction).
const txnBatch = 100

// Leaser is this replica's membership: writes commit only while its key
// still holds its lease, so a replica that lost its lease (and with it its
// sinks) never overwrites their new owner.
type Leaser interface {
	Key() string
	Lease() clientv3.LeaseID
}

// WithInterval sets how often the writer writes (the latest status of each
// sink wins meanwhile).
func WithInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.interval = d
		}
	}
}

// Writer copies statuses from a local view (the engine's broker) to etcd:
// it is one more watcher of that view per stream. Sink statuses are
// coalesced per sink, generation statuses per generation, and written at
// most once per interval in transactions conditional on the lease.
type Writer struct {
	cli  *clientv3.Client
	keys keys
	o    options
	src  status.View
	// filter says which statuses this replica writes: the sinks it runs,
	// and the generations of the streams it leads (one replica per stream
	// counts a generation's sinks and its convergence).
	filter engine.Ownership
	lease  Leaser

	mu      sync.Mutex
	base    context.Context
	streams map[string]context.CancelFunc
	sinks   map[string]*confighubv1.SinkStatus // nil: removed
	gens    map[string]map[uint64]*confighubv1.GenerationStatus
	// seen is the newest source revision marked per stream (tests wait on
	// it through WaitSeen).
	seen    map[string]uint64
	seenCh  chan struct{}
	wg      sync.WaitGroup
	io      sync.Mutex // serialises flushes and removals
	started bool
	// failedSig is what was last written of each sink's failed apply,
	// failedClear the applied generation up to which its records were
	// last deleted (see failedOps). Guarded by io.
	failedSig   map[string]string
	failedClear map[string]uint64
}

// NewWriter returns the writer of src's statuses under prefix; lease may be
// nil (unconditional writes, for a single writer in tests). Run starts it.
func NewWriter(cli *clientv3.Client, prefix string, src status.View, filter engine.Ownership, lease Leaser, opts ...Option) *Writer {
	return &Writer{cli: cli, keys: newKeys(prefix), o: newOptions(opts), src: src, filter: filter, lease: lease,
		streams: map[string]context.CancelFunc{}, sinks: map[string]*confighubv1.SinkStatus{},
		gens: map[string]map[uint64]*confighubv1.GenerationStatus{}, seen: map[string]uint64{}, seenCh: make(chan struct{}),
		failedSig: map[string]string{}, failedClear: map[string]uint64{}}
}

// Follow starts copying a stream's statuses (once per stream).
func (w *Writer) Follow(stream string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.base == nil || w.base.Err() != nil || w.streams[stream] != nil {
		if w.base == nil {
			w.streams[stream] = nil // followed once Run starts
		}
		return
	}
	w.follow(stream)
}

// follow watches one stream of the source. w.mu is held.
func (w *Writer) follow(stream string) {
	ctx, cancel := context.WithCancel(w.base)
	w.streams[stream] = cancel
	ch := w.src.Watch(ctx, stream, 0)
	w.wg.Go(func() {
		for ev := range ch {
			w.mark(stream, ev)
		}
	})
}

func (w *Writer) mark(stream string, ev *confighubv1.WatchStatusResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e := ev.GetEvent().(type) {
	case *confighubv1.WatchStatusResponse_Snapshot:
		for _, s := range e.Snapshot.GetSinks() {
			w.sinks[s.GetSink()] = s
		}
		for _, g := range e.Snapshot.GetGenerations() {
			w.markGen(stream, g)
		}
	case *confighubv1.WatchStatusResponse_Sink:
		w.sinks[e.Sink.GetSink()] = e.Sink
	case *confighubv1.WatchStatusResponse_SinkRemoved:
		w.sinks[e.SinkRemoved] = nil
	case *confighubv1.WatchStatusResponse_Generation:
		w.markGen(stream, e.Generation)
	}
	w.seen[stream] = max(w.seen[stream], ev.GetRevision())
	close(w.seenCh)
	w.seenCh = make(chan struct{})
}

func (w *Writer) markGen(stream string, g *confighubv1.GenerationStatus) {
	m := w.gens[stream]
	if m == nil {
		m = map[uint64]*confighubv1.GenerationStatus{}
		w.gens[stream] = m
	}
	m[g.GetGeneration()] = g
}

// WaitSeen returns once the writer took the source's changes of stream up
// to rev (or ctx ended).
func (w *Writer) WaitSeen(ctx context.Context, stream string, rev uint64) error {
	return waitUntil(ctx, func() (bool, <-chan struct{}) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.seen[stream] >= rev, w.seenCh
	})
}

// Run writes every interval until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	w.mu.Lock()
	w.base = ctx
	for stream := range w.streams {
		w.follow(stream)
	}
	w.mu.Unlock()
	t := w.o.clock.NewTicker(w.o.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			for _, c := range w.streams {
				c()
			}
			w.mu.Unlock()
			w.wg.Wait()
			return
		case <-t.Chan():
			if _, err := w.Flush(ctx); err != nil && ctx.Err() == nil {
				w.o.log.Warn("status writer: writing statuses to etcd failed; retrying", "error", err)
			}
		}
	}
}

type op struct {
	key  string
	val  proto.Message // nil: delete
	sink string
	gen  *genRef
}

type genRef struct {
	stream string
	gen    uint64
}

// Flush writes what changed since the last flush and returns the etcd
// revision of the last write (0 when nothing was written). On an error the
// unwritten statuses are kept for the next flush unless newer ones came.
func (w *Writer) Flush(ctx context.Context) (int64, error) {
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	sinks, gens := w.sinks, w.gens
	w.sinks, w.gens = map[string]*confighubv1.SinkStatus{}, map[string]map[uint64]*confighubv1.GenerationStatus{}
	w.mu.Unlock()
	var ops []op
	owned := map[string]*confighubv1.SinkStatus{}
	for name, st := range sinks {
		if !w.filter.OwnsSink(name) {
			// What this replica wrote of its failures is no guide when it
			// gets the sink back.
			delete(w.failedSig, name)
			delete(w.failedClear, name)
			continue
		}
		owned[name] = st
		o := op{key: w.keys.sink(name), sink: name}
		if st != nil {
			o.val = st
		}
		ops = append(ops, o)
	}
	var trims []clientv3.Op
	for stream, m := range gens {
		if !w.filter.OwnsStream(stream) {
			continue
		}
		var newest uint64
		for g := range m {
			newest = max(newest, g)
		}
		for g, gs := range m {
			if g+uint64(w.o.keepGens) > newest { // older ones are trimmed below
				ops = append(ops, op{key: w.keys.gen(stream, g), val: gs, gen: &genRef{stream, g}})
			}
		}
		if newest > uint64(w.o.keepGens) {
			// Only the last generations are kept, as the broker keeps them.
			trims = append(trims, clientv3.OpDelete(w.keys.genStream(stream), clientv3.WithRange(w.keys.gen(stream, newest-uint64(w.o.keepGens)+1))))
		}
	}
	slices.SortFunc(ops, func(a, b op) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	var rev int64
	for i := 0; i < len(ops); i += txnBatch {
		part := ops[i:min(i+txnBatch, len(ops))]
		eops := make([]clientv3.Op, 0, len(part)+len(trims))
		for _, o := range part {
			if o.val == nil {
				eops = append(eops, clientv3.OpDelete(o.key))
				continue
			}
			b, err := proto.Marshal(o.val)
			if err != nil {
				continue
			}
			eops = append(eops, clientv3.OpPut(o.key, string(b)))
		}
		if i+txnBatch >= len(ops) {
			eops = append(eops, trims...)
		}
		r, ok, err := w.commit(ctx, eops)
		if err != nil {
			w.requeue(ops[i:])
			return rev, err
		}
		if !ok {
			return rev, nil // the lease is gone: nothing here is ours to write
		}
		rev = r
	}
	if w.o.failures != nil {
		// After the statuses: a record is never newer in etcd than the
		// status that shows its failure.
		puts, dels := w.failedOps(owned)
		if err := w.writeFailed(ctx, owned, puts, dels); err != nil {
			return rev, err
		}
	}
	return rev, nil
}

func (w *Writer) commit(ctx context.Context, ops []clientv3.Op) (int64, bool, error) {
	tctx, cancel := context.WithTimeout(ctx, w.o.opTimeout)
	defer cancel()
	txn := w.cli.Txn(tctx)
	if w.lease != nil {
		id := w.lease.Lease()
		if id == 0 {
			return 0, false, nil // not a member now
		}
		txn = txn.If(clientv3.Compare(clientv3.LeaseValue(w.lease.Key()), "=", int64(id)))
	}
	resp, err := txn.Then(ops...).Commit()
	if err != nil {
		return 0, false, err
	}
	return resp.Header.Revision, resp.Succeeded, nil
}

// requeue puts back what a failed flush did not write, unless newer
// statuses came meanwhile.
func (w *Writer) requeue(ops []op) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range ops {
		switch {
		case o.gen != nil:
			if w.gens[o.gen.stream][o.gen.gen] == nil {
				w.markGen(o.gen.stream, o.val.(*confighubv1.GenerationStatus))
			}
		default:
			if _, newer := w.sinks[o.sink]; !newer {
				st, _ := o.val.(*confighubv1.SinkStatus)
				w.sinks[o.sink] = st
			}
		}
	}
}

// Remove deletes a deleted sink's status whoever owned it (its owner may
// be gone); unconditional, and ordered after any flush in progress.
func (w *Writer) Remove(ctx context.Context, name string) error {
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	delete(w.sinks, name)
	w.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, w.o.opTimeout)
	defer cancel()
	delete(w.failedSig, name)
	delete(w.failedClear, name)
	_, err := w.cli.Txn(tctx).Then(clientv3.OpDelete(w.keys.sink(name)), clientv3.OpDelete(w.keys.failedSink(name), clientv3.WithPrefix())).Commit()
	return err
}
