package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Snapshot reasons, as the engine's broker sends them.
const (
	ReasonStart       = "start"
	ReasonResumeGap   = "resume-gap"
	ReasonSlowWatcher = "slow-watcher"
)

// txnBatch bounds the puts of one status Txn (etcd's default limit is 128
// operations per transaction).
const txnBatch = 100

// statusWriter copies the statuses of the sinks this replica runs from the
// local engine to <prefix>/status/<sink>: coalesced per sink (the latest
// wins) and written at most once per interval, in transactions that only
// commit while this replica's lease is alive, so a replica that lost its
// lease (and with it its sinks) cannot overwrite the new owner.
type statusWriter struct {
	f *Fanout

	mu      sync.Mutex
	base    context.Context
	dirty   map[string]*confighubv1.SinkStatus
	streams map[string]context.CancelFunc
	wg      sync.WaitGroup

	// io serialises writes and deletes, so a delete is never overtaken by a
	// write that was in flight.
	io sync.Mutex
}

func newStatusWriter(f *Fanout) *statusWriter {
	return &statusWriter{f: f, dirty: map[string]*confighubv1.SinkStatus{}, streams: map[string]context.CancelFunc{}}
}

func (w *statusWriter) run(ctx context.Context) {
	w.mu.Lock()
	w.base = ctx
	w.mu.Unlock()
	w.follow(ctx)
	t := w.f.clock.NewTicker(w.f.statusEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			for _, c := range w.streams {
				c()
			}
			w.streams = map[string]context.CancelFunc{}
			w.mu.Unlock()
			w.wg.Wait()
			return
		case <-t.Chan():
			w.flush(ctx)
		}
	}
}

// follow watches the local engine's status of every stream that has a sink
// running here.
func (w *statusWriter) follow(context.Context) {
	w.f.mu.Lock()
	want := map[string]bool{}
	for _, s := range w.f.running {
		want[s.GetStream()] = true
	}
	w.f.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.base == nil || w.base.Err() != nil {
		return
	}
	for name, cancel := range w.streams {
		if !want[name] {
			cancel()
			delete(w.streams, name)
		}
	}
	for name := range want {
		if w.streams[name] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(w.base)
		w.streams[name] = cancel
		ch := w.f.eng.Watch(ctx, name, 0)
		w.wg.Go(func() {
			for ev := range ch {
				switch e := ev.GetEvent().(type) {
				case *confighubv1.WatchStatusResponse_Snapshot:
					for _, s := range e.Snapshot.GetSinks() {
						w.mark(s)
					}
				case *confighubv1.WatchStatusResponse_Sink:
					w.mark(e.Sink)
				}
			}
		})
	}
}

func (w *statusWriter) mark(s *confighubv1.SinkStatus) {
	if !w.f.owns(s.GetSink()) {
		return
	}
	w.mu.Lock()
	w.dirty[s.GetSink()] = s
	w.mu.Unlock()
}

func (w *statusWriter) flush(ctx context.Context) {
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	if len(w.dirty) == 0 {
		w.mu.Unlock()
		return
	}
	batch := w.dirty
	w.dirty = map[string]*confighubv1.SinkStatus{}
	w.mu.Unlock()
	lease := w.f.mem.Lease()
	if lease == 0 {
		return // not a member: the sinks are (being) stopped here
	}
	names := make([]string, 0, len(batch))
	for name := range batch {
		if w.f.owns(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for len(names) > 0 {
		n := min(len(names), txnBatch)
		part := names[:n]
		names = names[n:]
		ops := make([]clientv3.Op, 0, n)
		for _, name := range part {
			b, err := proto.Marshal(batch[name])
			if err != nil {
				continue
			}
			ops = append(ops, clientv3.OpPut(w.f.statusKey(name), string(b)))
		}
		tctx, cancel := context.WithTimeout(ctx, w.f.opTimeout)
		resp, err := w.f.cli.Txn(tctx).
			If(clientv3.Compare(clientv3.LeaseValue(w.f.mem.Key()), "=", int64(lease))).
			Then(ops...).Commit()
		cancel()
		switch {
		case err != nil:
			// Keep them for the next flush unless a newer status came.
			w.mu.Lock()
			for _, name := range append(part, names...) {
				if w.dirty[name] == nil {
					w.dirty[name] = batch[name]
				}
			}
			w.mu.Unlock()
			if ctx.Err() == nil {
				w.f.log.Warn("cluster: writing sink statuses failed; retrying", "error", err)
			}
			return
		case !resp.Succeeded:
			return // the lease is gone: this replica owns nothing now
		}
	}
}

// remove deletes a deleted sink's status key.
func (w *statusWriter) remove(ctx context.Context, name string) {
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	delete(w.dirty, name)
	w.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, w.f.opTimeout)
	defer cancel()
	if _, err := w.f.cli.Delete(tctx, w.f.statusKey(name)); err != nil {
		w.f.log.Warn("cluster: deleting a sink's status failed", "sink", name, "error", err)
	}
}

// mirror keeps every replica's copy of the status keys, for GetStatus.
type mirror struct {
	f     *Fanout
	mu    sync.Mutex
	rev   int64
	sinks map[string]*confighubv1.SinkStatus
}

func newMirror(f *Fanout) *mirror { return &mirror{f: f, sinks: map[string]*confighubv1.SinkStatus{}} }

func (m *mirror) run(ctx context.Context) {
	for ctx.Err() == nil {
		tctx, cancel := context.WithTimeout(ctx, m.f.opTimeout)
		resp, err := m.f.cli.Get(tctx, m.f.statusPrefix(), clientv3.WithPrefix())
		cancel()
		if err != nil {
			if !m.f.wait(ctx) {
				return
			}
			continue
		}
		sinks := map[string]*confighubv1.SinkStatus{}
		for _, kv := range resp.Kvs {
			if st := m.f.decode(kv.Value); st != nil {
				sinks[m.f.sinkOf(kv.Key)] = st
			}
		}
		m.mu.Lock()
		m.sinks, m.rev = sinks, resp.Header.Revision
		m.mu.Unlock()
		wctx, wcancel := context.WithCancel(ctx)
		for wr := range m.f.cli.Watch(wctx, m.f.statusPrefix(), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
			if wr.Err() != nil {
				break
			}
			m.mu.Lock()
			for _, ev := range wr.Events {
				name := m.f.sinkOf(ev.Kv.Key)
				if ev.Type == clientv3.EventTypeDelete {
					delete(m.sinks, name)
				} else if st := m.f.decode(ev.Kv.Value); st != nil {
					m.sinks[name] = st
				}
				m.rev = max(m.rev, ev.Kv.ModRevision)
			}
			m.mu.Unlock()
		}
		wcancel()
	}
}

func (m *mirror) snapshot(stream string) (int64, []*confighubv1.SinkStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*confighubv1.SinkStatus
	for _, st := range m.sinks {
		if st.GetStream() == stream {
			out = append(out, st)
		}
	}
	return m.rev, out
}

func (m *mirror) get(name string) *confighubv1.SinkStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sinks[name]
}

func (f *Fanout) sinkOf(key []byte) string { return strings.TrimPrefix(string(key), f.statusPrefix()) }

func (f *Fanout) decode(b []byte) *confighubv1.SinkStatus {
	st := &confighubv1.SinkStatus{}
	if err := proto.Unmarshal(b, st); err != nil {
		f.log.Warn("cluster: undecodable sink status in etcd", "error", err)
		return nil
	}
	return st
}

// snapshot builds a stream's status at rev from its sinks' statuses. Sinks
// no longer stored are left out (their key may outlive a delete made while
// their owner was down).
func (f *Fanout) snapshot(stream string, rev int64, sinks []*confighubv1.SinkStatus) *confighubv1.GetStatusResponse {
	f.mu.Lock()
	kept := sinks[:0:0]
	has := map[string]bool{}
	for _, s := range sinks {
		if spec := f.specs[s.GetSink()]; spec != nil && spec.GetStream() == stream {
			kept = append(kept, s)
			has[s.GetSink()] = true
		}
	}
	// A stored sink whose owner has not written a status yet is listed as
	// pending, so every replica lists every sink.
	for name, spec := range f.specs {
		if spec.GetStream() == stream && !has[name] {
			kept = append(kept, &confighubv1.SinkStatus{Sink: name, Kind: spec.GetKind(), Stream: stream,
				State: confighubv1.SinkState_SINK_STATE_PENDING, Reason: "no status from its owner yet"})
		}
	}
	f.mu.Unlock()
	slices.SortFunc(kept, func(a, b *confighubv1.SinkStatus) int { return strings.Compare(a.GetSink(), b.GetSink()) })
	resp := &confighubv1.GetStatusResponse{Revision: uint64(max(rev, 0)), Stream: stream, Sinks: kept}
	resp.Generations = f.generations(stream, kept)
	if n := len(resp.Generations); n > 0 {
		resp.Generation = resp.Generations[n-1].GetGeneration()
		resp.Hash = resp.Generations[n-1].GetHash()
	}
	return resp
}

// generations computes the recent generations' counts from the sinks'
// statuses: applied = sinks whose applied generation reached it, total =
// the stream's stored sinks. The converge time is the latest apply time
// of the sinks sitting at that generation (approximate: the exact moment
// is only known to the owners).
func (f *Fanout) generations(stream string, sinks []*confighubv1.SinkStatus) []*confighubv1.GenerationStatus {
	f.mu.Lock()
	known := slices.Clone(f.gens[stream])
	total := 0
	for _, s := range f.specs {
		if s.GetStream() == stream {
			total++
		}
	}
	f.mu.Unlock()
	out := make([]*confighubv1.GenerationStatus, 0, len(known))
	for _, g := range known {
		gs := &confighubv1.GenerationStatus{Generation: g.gen, Hash: g.hash, SinksTotal: uint32(total), Labels: g.labels}
		if !g.accept.IsZero() {
			gs.AcceptTime = timestamppb.New(g.accept)
		}
		var last time.Time
		for _, s := range sinks {
			if s.GetAppliedGeneration() >= g.gen {
				gs.SinksApplied++
			}
			if s.GetAppliedGeneration() == g.gen && s.GetLastAppliedTime() != nil && s.GetLastAppliedTime().AsTime().After(last) {
				last = s.GetLastAppliedTime().AsTime()
			}
		}
		if total > 0 && int(gs.SinksApplied) >= total && !last.IsZero() {
			gs.ConvergeTime = timestamppb.New(last)
		}
		out = append(out, gs)
	}
	return out
}

// watchStatus is one status watcher on etcd revisions (see Fanout.Watch).
func (f *Fanout) watchStatus(ctx context.Context, stream string, from uint64) <-chan *confighubv1.WatchStatusResponse {
	out := make(chan *confighubv1.WatchStatusResponse, f.watchBuffer)
	f.mu.Lock()
	if f.watchClosed {
		f.mu.Unlock()
		close(out)
		return out
	}
	f.watchWG.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.watchWG.Done()
		defer close(out)
		sw := &statusWatch{f: f, stream: stream, out: out}
		sw.run(ctx, int64(from))
	}()
	return out
}

type statusWatch struct {
	f      *Fanout
	stream string
	out    chan *confighubv1.WatchStatusResponse
	sinks  map[string]*confighubv1.SinkStatus
	gens   map[uint64]*confighubv1.GenerationStatus
}

func (w *statusWatch) list() []*confighubv1.SinkStatus {
	out := make([]*confighubv1.SinkStatus, 0, len(w.sinks))
	for _, s := range w.sinks {
		out = append(out, s)
	}
	return out
}

// load reads the stream's status keys at rev (0: now) and returns the
// revision read.
func (w *statusWatch) load(ctx context.Context, rev int64) (int64, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	tctx, cancel := context.WithTimeout(ctx, w.f.opTimeout)
	resp, err := w.f.cli.Get(tctx, w.f.statusPrefix(), opts...)
	cancel()
	if err != nil {
		return 0, err
	}
	w.sinks = map[string]*confighubv1.SinkStatus{}
	for _, kv := range resp.Kvs {
		if st := w.f.decode(kv.Value); st != nil && st.GetStream() == w.stream {
			w.sinks[w.f.sinkOf(kv.Key)] = st
		}
	}
	if rev > 0 {
		return rev, nil
	}
	return resp.Header.Revision, nil
}

func (w *statusWatch) run(ctx context.Context, from int64) {
	// Every watcher ends when the Fanout stops, so a graceful server stop
	// is not held up by open watches.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(w.f.baseCtx(), cancel)
	defer stop()

	reason := ReasonStart
	var rev int64
	if from > 0 {
		r, err := w.load(ctx, from)
		if err != nil {
			reason = ReasonResumeGap // compacted, or a revision etcd never had
		} else {
			rev, reason = r, ""
			w.gens = w.genMap()
		}
	}
	for ctx.Err() == nil {
		if reason != "" {
			r, err := w.load(ctx, 0)
			if err != nil {
				if !w.f.wait(ctx) {
					return
				}
				continue
			}
			rev = r
			snap := w.f.snapshot(w.stream, rev, w.list())
			w.gens = w.genMap()
			// The snapshot supersedes whatever the reader has not taken yet;
			// dropping that first leaves room (this goroutine is the only
			// sender), so the send never blocks, even on a reader gone.
			w.drain()
			w.out <- &confighubv1.WatchStatusResponse{Revision: uint64(rev), Event: &confighubv1.WatchStatusResponse_Snapshot{Snapshot: snap}, SnapshotReason: reason}
		}
		next, r := w.follow(ctx, rev)
		rev, reason = r, next
	}
}

func (w *statusWatch) drain() {
	for {
		select {
		case <-w.out:
		default:
			return
		}
	}
}

func (w *statusWatch) genMap() map[uint64]*confighubv1.GenerationStatus {
	m := map[uint64]*confighubv1.GenerationStatus{}
	for _, g := range w.f.generations(w.stream, w.list()) {
		m[g.GetGeneration()] = g
	}
	return m
}

// follow sends the changes after rev until the watch fails; it returns the
// reason of the snapshot to send next and the last revision sent.
func (w *statusWatch) follow(ctx context.Context, rev int64) (string, int64) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range w.f.cli.Watch(wctx, w.f.statusPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if wr.Err() != nil {
			return ReasonResumeGap, rev
		}
		for _, ev := range wr.Events {
			name := w.f.sinkOf(ev.Kv.Key)
			r := ev.Kv.ModRevision
			var msg *confighubv1.WatchStatusResponse
			if ev.Type == clientv3.EventTypeDelete {
				if _, ok := w.sinks[name]; ok {
					delete(w.sinks, name)
					msg = &confighubv1.WatchStatusResponse{Revision: uint64(r), Event: &confighubv1.WatchStatusResponse_SinkRemoved{SinkRemoved: name}}
				}
			} else if st := w.f.decode(ev.Kv.Value); st != nil {
				if st.GetStream() == w.stream {
					w.sinks[name] = st
					msg = &confighubv1.WatchStatusResponse{Revision: uint64(r), Event: &confighubv1.WatchStatusResponse_Sink{Sink: st}}
				} else if _, ok := w.sinks[name]; ok {
					// The sink moved to another stream.
					delete(w.sinks, name)
					msg = &confighubv1.WatchStatusResponse{Revision: uint64(r), Event: &confighubv1.WatchStatusResponse_SinkRemoved{SinkRemoved: name}}
				}
			}
			if msg != nil && !w.send(msg) {
				return ReasonSlowWatcher, rev
			}
			if msg == nil {
				continue
			}
			// Generation counts derived from this change carry its revision.
			for _, g := range w.f.generations(w.stream, w.list()) {
				if old := w.gens[g.GetGeneration()]; old != nil && proto.Equal(old, g) {
					continue
				}
				w.gens[g.GetGeneration()] = g
				if !w.send(&confighubv1.WatchStatusResponse{Revision: uint64(r), Event: &confighubv1.WatchStatusResponse_Generation{Generation: g}}) {
					return ReasonSlowWatcher, rev
				}
			}
			rev = r
		}
	}
	if ctx.Err() != nil {
		return "", rev
	}
	return ReasonResumeGap, rev
}

// send never blocks: a full buffer makes the watcher a victim.
func (w *statusWatch) send(msg *confighubv1.WatchStatusResponse) bool {
	select {
	case w.out <- msg:
		return true
	default:
		return false
	}
}
