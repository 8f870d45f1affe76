package status

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Snapshot reasons sent in WatchStatusResponse.snapshot_reason.
const (
	ReasonStart         = "start"
	ReasonResumeGap     = "resume-gap"
	ReasonSlowWatcher   = "slow-watcher"
	ReasonStreamDeleted = "stream-deleted" // the stream's generations were removed
)

// Option defaults, and how many recent generations per stream are kept.
const (
	DefaultHistory     = 4096
	DefaultWatchBuffer = 1024
	Generations        = 16
)

// Option configures a Broker.
type Option func(*Broker)

// WithHistory sets how many changes per stream are kept for resuming.
func WithHistory(n int) Option { return func(b *Broker) { b.history = cmp.Or(max(n, 0), b.history) } }

// WithWatchBuffer sets each watcher's channel capacity (at least 2).
func WithWatchBuffer(n int) Option {
	return func(b *Broker) { b.buffer = max(cmp.Or(max(n, 0), b.buffer), 2) }
}

// WithDispatchWindow batches the fan-out in rounds of d (0, the default: none).
func WithDispatchWindow(d time.Duration) Option {
	return func(b *Broker) { b.window = max(d, 0) }
}

// WithClock sets the clock of the dispatch window (tests pass a fake).
func WithClock(c clockwork.Clock) Option { return func(b *Broker) { b.clock = cmp.Or(c, b.clock) } }

// WithFirstRevision starts the revisions after rev (a resume from below: "resume-gap").
func WithFirstRevision(rev uint64) Option {
	return func(b *Broker) { b.rev, b.base = rev, rev }
}

// View is what status readers need (Broker, etcdstatus.Mirror: statustest).
type View interface {
	// Snapshot returns the stream's status at one revision; false when the
	// stream has neither a generation nor a sink.
	Snapshot(stream string) (*confighubv1.GetStatusResponse, bool)
	// Watch sends a "start" or "resume-gap" snapshot or the kept changes after
	// fromRevision, then every change ("slow-watcher" snapshot on overflow).
	Watch(ctx context.Context, stream string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse
}

var _ View = (*Broker)(nil)

// Broker is the revisioned status store; it never blocks on a watcher.
type Broker struct {
	history, buffer int
	window          time.Duration
	clock           clockwork.Clock

	mu         sync.Mutex
	rev        uint64
	base       uint64 // the revision before the first change
	streams    map[string]*stream
	closed     bool
	stop       chan struct{}
	wg         sync.WaitGroup
	dirty      chan struct{} // wakes the dispatcher: a change costs O(1)
	dispatcher bool
}

type stream struct {
	name       string
	sinks      []*confighubv1.SinkStatus                // sorted by name: a snapshot is one copy
	gens       []*confighubv1.GenerationStatus          // the recent generations, ascending
	held       map[uint64]*confighubv1.GenerationStatus // ahead of the sinks (PutGeneration)
	hist       []*confighubv1.WatchStatusResponse       // the last changes, ascending
	trimmed    uint64                                   // newest revision dropped from hist
	watchers   map[*watcher]struct{}
	dispatched uint64 // newest revision handed to the dispatcher
}

// watcher is one Watch. Lock order: Broker.mu before watcher.mu.
type watcher struct {
	kick chan struct{}
	mu   sync.Mutex
	ch   chan *confighubv1.WatchStatusResponse
	last uint64 // the revision of the newest change or snapshot sent
	// victim: nothing is sent until serve replaces the backlog by a snapshot.
	victim bool
	reason string
	closed bool
}

// New returns a broker.
func New(opts ...Option) *Broker {
	b := &Broker{
		history: DefaultHistory,
		buffer:  DefaultWatchBuffer,
		clock:   clockwork.NewRealClock(),
		streams: map[string]*stream{},
		stop:    make(chan struct{}),
		dirty:   make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

func (b *Broker) stream(name string) *stream {
	s := b.streams[name]
	if s == nil {
		s = &stream{name: name, held: map[uint64]*confighubv1.GenerationStatus{}, watchers: map[*watcher]struct{}{}}
		b.streams[name] = s
	}
	return s
}

// Revision returns the revision of the newest change.
func (b *Broker) Revision() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rev
}

// at locks b and returns the revision of a change at rev (0: next), 0 if not above Revision().
func (b *Broker) at(rev uint64) uint64 {
	b.mu.Lock()
	switch {
	case rev == 0:
		return b.rev + 1
	case rev <= b.rev:
		return 0
	}
	return rev
}

// PutSink stores st (not modified after) as its sink's newest status; it returns the revision.
func (b *Broker) PutSink(st *confighubv1.SinkStatus) uint64 { return b.PutSinkAt(0, st) }

// PutSinkAt is PutSink at the caller's revision (0: next); like every At
// method it drops a change not above Revision() and returns 0.
func (b *Broker) PutSinkAt(rev uint64, st *confighubv1.SinkStatus) uint64 {
	defer b.mu.Unlock()
	if rev = b.at(rev); rev == 0 {
		return 0
	}
	s := b.stream(st.GetStream())
	if i, found := s.find(st.GetSink()); found {
		s.sinks[i] = st
	} else {
		s.sinks = slices.Insert(s.sinks, i, st)
	}
	rev = b.publish(s, rev, &confighubv1.WatchStatusResponse{Event: &confighubv1.WatchStatusResponse_Sink{Sink: st}})
	for _, gen := range slices.Sorted(maps.Keys(s.held)) {
		if g := s.held[gen]; g.GetSinksApplied() <= s.appliedBy(gen) {
			delete(s.held, gen)
			b.putGeneration(s, b.rev+1, g)
		}
	}
	return rev
}

// RemoveSink deletes a sink's status. It returns 0 when the sink had none.
func (b *Broker) RemoveSink(streamName, sinkName string) uint64 {
	return b.RemoveSinkAt(0, streamName, sinkName)
}

// RemoveSinkAt is RemoveSink at a revision given by the caller.
func (b *Broker) RemoveSinkAt(rev uint64, streamName, sinkName string) uint64 {
	defer b.mu.Unlock()
	rev = b.at(rev)
	s := b.streams[streamName]
	if rev == 0 || s == nil {
		return 0
	}
	i, found := s.find(sinkName)
	if !found {
		return 0
	}
	s.sinks = slices.Delete(s.sinks, i, i+1)
	return b.publish(s, rev, &confighubv1.WatchStatusResponse{Event: &confighubv1.WatchStatusResponse_SinkRemoved{SinkRemoved: sinkName}})
}

// PutGeneration stores a generation's status: dropped (0) if older than the newest
// Generations, held (0) while its sinks_applied is ahead of the sinks' statuses.
func (b *Broker) PutGeneration(streamName string, g *confighubv1.GenerationStatus) uint64 {
	return b.PutGenerationAt(0, streamName, g)
}

// PutGenerationAt is PutGeneration at a revision given by the caller.
func (b *Broker) PutGenerationAt(rev uint64, streamName string, g *confighubv1.GenerationStatus) uint64 {
	defer b.mu.Unlock()
	if rev = b.at(rev); rev == 0 {
		return 0
	}
	s := b.stream(streamName)
	if g.GetSinksApplied() > s.appliedBy(g.GetGeneration()) {
		s.held[g.GetGeneration()] = g
		return 0
	}
	delete(s.held, g.GetGeneration())
	return b.putGeneration(s, rev, g)
}

// GapAt says changes before rev may be missing: watchers get a "resume-gap" snapshot.
func (b *Broker) GapAt(rev uint64) {
	defer b.mu.Unlock()
	if rev = b.at(rev); rev == 0 {
		return
	}
	b.rev = rev
	for _, s := range b.streams {
		s.trimmed = rev
		s.cutOver(ReasonResumeGap)
		if len(s.watchers) == 0 {
			s.dispatched = rev
		}
	}
}

// RemoveStream forgets a stream without sinks; watchers get a ReasonStreamDeleted snapshot.
func (b *Broker) RemoveStream(streamName string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.streams[streamName]
	if s == nil || len(s.sinks) > 0 {
		return
	}
	if len(s.watchers) == 0 {
		delete(b.streams, streamName)
		return
	}
	b.rev++ // a resume from before gets a snapshot
	s.gens, s.hist, s.trimmed = nil, nil, b.rev
	clear(s.held)
	s.cutOver(ReasonStreamDeleted)
}

// cutOver sends every open watcher of s a fresh snapshot. b.mu is held.
func (s *stream) cutOver(reason string) {
	for w := range s.watchers {
		w.mu.Lock()
		if !w.closed {
			w.cutOver(reason)
		}
		w.mu.Unlock()
	}
}

// appliedBy counts the sinks whose status has applied gen or a later one.
func (s *stream) appliedBy(gen uint64) uint32 {
	var n uint32
	for _, st := range s.sinks {
		if st.GetAppliedGeneration() >= gen {
			n++
		}
	}
	return n
}

// putGeneration stores and publishes g at rev. b.mu is held.
func (b *Broker) putGeneration(s *stream, rev uint64, g *confighubv1.GenerationStatus) uint64 {
	i, found := slices.BinarySearchFunc(s.gens, g.GetGeneration(), func(x *confighubv1.GenerationStatus, gen uint64) int {
		return cmp.Compare(x.GetGeneration(), gen)
	})
	switch {
	case found:
		s.gens[i] = g
	case i == 0 && len(s.gens) >= Generations:
		return 0
	default:
		s.gens = slices.Insert(s.gens, i, g)
		if n := len(s.gens) - Generations; n > 0 {
			s.gens = slices.Delete(s.gens, 0, n)
		}
	}
	return b.publish(s, rev, &confighubv1.WatchStatusResponse{Event: &confighubv1.WatchStatusResponse_Generation{Generation: g}})
}

// publish numbers ev, keeps it in history and wakes the dispatcher. b.mu is held.
func (b *Broker) publish(s *stream, rev uint64, ev *confighubv1.WatchStatusResponse) uint64 {
	b.rev = rev
	ev.Revision = b.rev
	if s.hist = append(s.hist, ev); len(s.hist) > b.history {
		s.trimmed = s.hist[0].GetRevision()
		s.hist = s.hist[1:]
	}
	if len(s.watchers) > 0 {
		select {
		case b.dirty <- struct{}{}:
		default:
		}
	} else {
		s.dispatched = b.rev
	}
	return b.rev
}

// batch is what one dispatch round sends to one stream's watchers.
type batch struct {
	watchers []*watcher
	events   []*confighubv1.WatchStatusResponse
	trimmed  uint64
}

// dispatch fans new changes out; a watcher whose buffer is full becomes a victim.
func (b *Broker) dispatch() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stop:
			return
		case <-b.dirty:
		}
		if b.window > 0 {
			t := b.clock.NewTimer(b.window)
			select {
			case <-b.stop:
				t.Stop()
				return
			case <-t.Chan():
			}
		}
		b.mu.Lock()
		var work []batch
		for _, s := range b.streams {
			if s.dispatched == b.rev || len(s.watchers) == 0 {
				s.dispatched = b.rev
				continue
			}
			bt := batch{events: coalesce(after(s.hist, s.dispatched)), trimmed: s.trimmed}
			for w := range s.watchers {
				bt.watchers = append(bt.watchers, w)
			}
			s.dispatched = b.rev
			work = append(work, bt)
		}
		b.mu.Unlock()
		for _, bt := range work {
			for _, w := range bt.watchers {
				w.offer(bt.events, bt.trimmed)
			}
		}
	}
}

// coalesce drops the changes a later one of the same sink (before the next generation
// change) or generation supersedes: watchers match at each generation. It reuses events.
func coalesce(events []*confighubv1.WatchStatusResponse) []*confighubv1.WatchStatusResponse {
	if len(events) < 2 {
		return events
	}
	laterSink := map[string]bool{}
	laterGen := map[uint64]bool{}
	keep := len(events)
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if name := cmp.Or(ev.GetSink().GetSink(), ev.GetSinkRemoved()); name != "" {
			if laterSink[name] {
				continue
			}
			laterSink[name] = true
		} else if g := ev.GetGeneration(); g != nil {
			if laterGen[g.GetGeneration()] {
				continue
			}
			laterGen[g.GetGeneration()] = true
			clear(laterSink)
		} else {
			clear(laterSink)
		}
		keep--
		events[keep] = ev
	}
	n := copy(events, events[keep:])
	clear(events[n:])
	return events[:n]
}

// offer sends the changes w has not seen, or makes w a victim.
func (w *watcher) offer(events []*confighubv1.WatchStatusResponse, trimmed uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.victim || w.closed {
		return
	}
	if w.last < trimmed {
		w.cutOver(ReasonSlowWatcher)
		return
	}
	for _, ev := range events {
		if ev.GetRevision() <= w.last {
			continue // in its snapshot already
		}
		select {
		case w.ch <- ev:
			w.last = ev.GetRevision()
		default:
			w.cutOver(ReasonSlowWatcher)
			return
		}
	}
}

// cutOver marks w a victim and wakes its goroutine. w.mu is held.
func (w *watcher) cutOver(reason string) {
	w.victim, w.reason = true, reason
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Snapshot returns the stream's status at the current revision (View).
func (b *Broker) Snapshot(streamName string) (*confighubv1.GetStatusResponse, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.streams[streamName]
	if s == nil || (len(s.gens) == 0 && len(s.sinks) == 0) {
		return nil, false
	}
	return b.snapshot(s), true
}

func (b *Broker) snapshot(s *stream) *confighubv1.GetStatusResponse {
	resp := &confighubv1.GetStatusResponse{Revision: b.rev, Stream: s.name, Sinks: slices.Clone(s.sinks)}
	if n := len(s.gens); n > 0 {
		resp.Generation = s.gens[n-1].GetGeneration()
		resp.Hash = s.gens[n-1].GetHash()
		resp.Generations = slices.Clone(s.gens)
	}
	return resp
}

// find returns the index of a sink's status, or where it would go.
func (s *stream) find(name string) (int, bool) {
	return slices.BinarySearchFunc(s.sinks, name, func(st *confighubv1.SinkStatus, n string) int {
		return strings.Compare(st.GetSink(), n)
	})
}

func (b *Broker) snapshotEvent(s *stream, reason string) *confighubv1.WatchStatusResponse {
	snap := b.snapshot(s)
	return &confighubv1.WatchStatusResponse{
		Revision:       snap.GetRevision(),
		Event:          &confighubv1.WatchStatusResponse_Snapshot{Snapshot: snap},
		SnapshotReason: reason,
	}
}

// Watch streams the status of a stream (View).
func (b *Broker) Watch(ctx context.Context, streamName string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse {
	w := &watcher{ch: make(chan *confighubv1.WatchStatusResponse, b.buffer), kick: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(w.ch)
		return w.ch
	}
	s := b.stream(streamName)
	w.last = b.rev
	resume := fromRevision > 0 && fromRevision <= b.rev && fromRevision >= s.trimmed && fromRevision >= b.base
	var evs []*confighubv1.WatchStatusResponse
	if resume {
		evs = after(s.hist, fromRevision)
	}
	switch {
	case fromRevision == 0:
		w.ch <- b.snapshotEvent(s, ReasonStart)
	case !resume || len(evs) > cap(w.ch):
		w.ch <- b.snapshotEvent(s, ReasonResumeGap)
	default:
		for _, ev := range evs {
			w.ch <- ev
		}
	}
	if len(s.watchers) == 0 {
		s.dispatched = b.rev
	}
	s.watchers[w] = struct{}{}
	if !b.dispatcher {
		b.dispatcher = true
		b.wg.Add(1)
		go b.dispatch()
	}
	b.wg.Add(1)
	go b.serve(ctx, s, w)
	return w.ch
}

// serve owns one watcher: it closes it at the end and cuts a victim over to a snapshot.
func (b *Broker) serve(ctx context.Context, s *stream, w *watcher) {
	defer b.wg.Done()
	for {
		select {
		case <-ctx.Done():
			b.drop(s, w)
			return
		case <-b.stop:
			b.drop(s, w)
			return
		case <-w.kick: // only serve sends to a victim: drained, it has room
		drain:
			for {
				select {
				case <-w.ch:
				default:
					break drain
				}
			}
			b.mu.Lock()
			w.mu.Lock()
			if !w.closed {
				ev := b.snapshotEvent(s, w.reason)
				w.ch <- ev
				w.last = ev.GetRevision()
				w.victim = false
			}
			w.mu.Unlock()
			b.mu.Unlock()
		}
	}
}

func (b *Broker) drop(s *stream, w *watcher) {
	b.mu.Lock()
	delete(s.watchers, w)
	w.mu.Lock()
	w.closed = true
	close(w.ch)
	w.mu.Unlock()
	if len(s.watchers) == 0 && len(s.sinks) == 0 && len(s.gens) == 0 && len(s.held) == 0 && len(s.hist) == 0 {
		delete(b.streams, s.name)
	}
	b.mu.Unlock()
}

// Close closes every watcher and waits; changes are still stored after it.
func (b *Broker) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stop)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// after returns a copy of the changes of hist with a revision above rev.
func after(hist []*confighubv1.WatchStatusResponse, rev uint64) []*confighubv1.WatchStatusResponse {
	i := sort.Search(len(hist), func(i int) bool { return hist[i].GetRevision() > rev })
	return slices.Clone(hist[i:])
}
