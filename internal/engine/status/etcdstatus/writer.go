package etcdstatus

import (
	"bytes"
	"context"
	"slices"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/engine/status"
)

// Leaser is this replica's membership: writes commit only while its key holds its lease.
type Leaser interface {
	Key() string
	Lease() clientv3.LeaseID
}

// Writer copies the owned sinks' and led streams' statuses to etcd each interval, under the lease.
type Writer struct {
	cli    *clientv3.Client
	keys   keys
	o      options
	src    status.View
	filter engine.Ownership
	lease  Leaser

	mu          sync.Mutex
	base        context.Context
	streams     map[string]bool                    // followed (false: once Run starts)
	sinks       map[string]*confighubv1.SinkStatus // nil: removed
	gens        map[genKey]*confighubv1.GenerationStatus
	seen        map[string]uint64 // the newest source revision taken, per stream (tests wait on it: WaitSeen)
	seenCh      chan struct{}     // closed at each change taken
	wg          sync.WaitGroup
	io          sync.Mutex        // serialises flushes and removals; guards the two below
	failedSig   map[string]string // the last failed apply written, per sink
	failedClear map[string]uint64 // the generation up to which records were deleted
}

// NewWriter returns the writer of src's statuses under prefix (lease nil: unconditional).
func NewWriter(cli *clientv3.Client, prefix string, src status.View, filter engine.Ownership, lease Leaser, opts ...Option) *Writer {
	return &Writer{cli: cli, keys: newKeys(prefix), o: newOptions(opts), src: src, filter: filter, lease: lease,
		streams: map[string]bool{}, sinks: map[string]*confighubv1.SinkStatus{},
		gens: map[genKey]*confighubv1.GenerationStatus{}, seen: map[string]uint64{}, seenCh: make(chan struct{}),
		failedSig: map[string]string{}, failedClear: map[string]uint64{}}
}

// Follow starts copying a stream's statuses (from Run on).
func (w *Writer) Follow(stream string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.base == nil:
		w.streams[stream] = false
	case w.base.Err() == nil && !w.streams[stream]:
		w.follow(stream)
	}
}

// follow watches one stream of the source. w.mu is held.
func (w *Writer) follow(stream string) {
	w.streams[stream] = true
	ch := w.src.Watch(w.base, stream, 0)
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
			w.gens[genKey{stream, g.GetGeneration()}] = g
		}
	case *confighubv1.WatchStatusResponse_Sink:
		w.sinks[e.Sink.GetSink()] = e.Sink
	case *confighubv1.WatchStatusResponse_SinkRemoved:
		w.sinks[e.SinkRemoved] = nil
	case *confighubv1.WatchStatusResponse_Generation:
		w.gens[genKey{stream, e.Generation.GetGeneration()}] = e.Generation
	}
	w.seen[stream] = max(w.seen[stream], ev.GetRevision())
	close(w.seenCh)
	w.seenCh = make(chan struct{})
}

type genKey struct {
	stream string
	gen    uint64
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
			w.wg.Wait() // the watches end with ctx
			return
		case <-t.Chan():
			if _, err := w.Flush(ctx); err != nil && ctx.Err() == nil {
				w.o.log.Warn("status writer: writing statuses to etcd failed; retrying", "error", err)
			}
		}
	}
}

// Flush writes what changed and returns the last write's etcd revision (0:
// none); on error the unwritten statuses are kept unless newer ones came.
func (w *Writer) Flush(ctx context.Context) (int64, error) {
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	sinks, gens := w.sinks, w.gens
	w.sinks, w.gens = map[string]*confighubv1.SinkStatus{}, map[genKey]*confighubv1.GenerationStatus{}
	w.mu.Unlock()
	var ops, trims []clientv3.Op
	owned := map[string]*confighubv1.SinkStatus{}
	for name, st := range sinks {
		if !w.filter.OwnsSink(name) {
			delete(w.failedSig, name)
			delete(w.failedClear, name)
			continue
		}
		owned[name] = st
		ops = appendPut(ops, w.keys.sink(name), st)
	}
	newest := map[string]uint64{}
	for k := range gens {
		if w.filter.OwnsStream(k.stream) {
			newest[k.stream] = max(newest[k.stream], k.gen)
		}
	}
	for k, gs := range gens {
		if n, owned := newest[k.stream]; owned && k.gen+status.Generations > n { // older ones are trimmed below
			ops = appendPut(ops, w.keys.gen(k.stream, k.gen), gs)
		}
	}
	for stream, n := range newest {
		if n > status.Generations {
			trims = append(trims, clientv3.OpDelete(w.keys.genStream(stream), clientv3.WithRange(w.keys.gen(stream, n-status.Generations+1))))
		}
	}
	slices.SortFunc(ops, func(a, b clientv3.Op) int { return bytes.Compare(a.KeyBytes(), b.KeyBytes()) })
	var rev int64
	for i := 0; i < len(ops); i += txnBatch {
		batch := ops[i:min(i+txnBatch, len(ops))]
		if i+txnBatch >= len(ops) {
			batch = slices.Concat(batch, trims)
		}
		r, ok, err := w.commit(ctx, batch)
		if err != nil {
			w.requeue(owned, gens)
			return rev, err
		}
		if !ok {
			return rev, nil // the lease is gone: nothing here is ours to write
		}
		rev = r
	}
	if w.o.failures != nil { // after the statuses, which show the failure
		if err := w.writeFailed(ctx, owned); err != nil {
			clear(w.failedSig)
			clear(w.failedClear)
			w.requeue(owned, nil)
			return rev, err
		}
	}
	return rev, nil
}

// appendPut appends the write of v under key (a delete when v is nil).
func appendPut(ops []clientv3.Op, key string, v proto.Message) []clientv3.Op {
	if v.ProtoReflect().IsValid() {
		if b, err := proto.Marshal(v); err == nil {
			return append(ops, clientv3.OpPut(key, string(b)))
		}
		return ops
	}
	return append(ops, clientv3.OpDelete(key))
}

// commit runs ops in one transaction; false without the lease.
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

// requeue puts back what a failed flush took, unless newer came.
func (w *Writer) requeue(sinks map[string]*confighubv1.SinkStatus, gens map[genKey]*confighubv1.GenerationStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, st := range sinks {
		if _, newer := w.sinks[name]; !newer {
			w.sinks[name] = st
		}
	}
	for k, gs := range gens {
		if w.gens[k] == nil {
			w.gens[k] = gs
		}
	}
}

// Remove deletes a deleted sink's status unconditionally, after any flush.
func (w *Writer) Remove(ctx context.Context, name string) error {
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	delete(w.sinks, name)
	w.mu.Unlock()
	delete(w.failedSig, name)
	delete(w.failedClear, name)
	tctx, cancel := context.WithTimeout(ctx, w.o.opTimeout)
	defer cancel()
	_, err := w.cli.Txn(tctx).Then(clientv3.OpDelete(w.keys.sink(name)), clientv3.OpDelete(w.keys.failedSink(name), clientv3.WithPrefix())).Commit()
	return err
}
