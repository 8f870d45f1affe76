package hubclient

import (
	"maps"
	"slices"
	"strings"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Outcome is what a sink did with a generation.
type Outcome int

// The outcomes of OutcomeOf: Applied and Rejected cover a later generation too.
const (
	Pending Outcome = iota
	Applied
	Rejected
)

// OutcomeOf says what the sink of st did with generation gen.
func OutcomeOf(st *confighubv1.SinkStatus, gen uint64) Outcome {
	switch {
	case st.GetAppliedGeneration() >= gen:
		return Applied
	case st.GetRejectedGeneration() >= gen:
		return Rejected
	}
	return Pending
}

// StatusView is one stream's status folded from its WatchStatus events,
// counting the sinks by Outcome as they come. Not safe for concurrent use.
type StatusView struct {
	stream string
	rev    uint64
	gen    uint64
	hash   string
	sinks  map[string]*confighubv1.SinkStatus
	gens   []*confighubv1.GenerationStatus
	ready  bool

	target uint64
	only   func(sink string) bool
	counts [3]int // by Outcome, of the sinks only accepts
}

// NewStatusView returns an empty view counting the sinks of only (nil: all) for gen.
func NewStatusView(gen uint64, only func(sink string) bool) *StatusView {
	return &StatusView{sinks: map[string]*confighubv1.SinkStatus{}, target: gen, only: only}
}

// Target recounts the view for generation gen and the sinks of only.
func (v *StatusView) Target(gen uint64, only func(sink string) bool) {
	v.target, v.only, v.counts = gen, only, [3]int{}
	for _, st := range v.sinks {
		v.count(st, 1)
	}
}

func (v *StatusView) count(st *confighubv1.SinkStatus, d int) {
	if v.only == nil || v.only(st.GetSink()) {
		v.counts[OutcomeOf(st, v.target)] += d
	}
}

func (v *StatusView) put(st *confighubv1.SinkStatus) {
	if old := v.sinks[st.GetSink()]; old != nil {
		v.count(old, -1)
	}
	v.sinks[st.GetSink()] = st
	v.count(st, 1)
}

// Apply folds one event into the view.
func (v *StatusView) Apply(ev *confighubv1.WatchStatusResponse) {
	v.rev = ev.GetRevision()
	switch {
	case ev.GetSnapshot() != nil:
		s := ev.GetSnapshot()
		clear(v.sinks)
		v.counts, v.ready = [3]int{}, true
		v.stream, v.gen, v.hash = s.GetStream(), s.GetGeneration(), s.GetHash()
		v.gens = append([]*confighubv1.GenerationStatus(nil), s.GetGenerations()...)
		if v.rev == 0 {
			v.rev = s.GetRevision()
		}
		for _, st := range s.GetSinks() {
			v.put(st)
		}
	case ev.GetSink() != nil:
		v.put(ev.GetSink())
	case ev.GetSinkRemoved() != "":
		if old := v.sinks[ev.GetSinkRemoved()]; old != nil {
			v.count(old, -1)
			delete(v.sinks, ev.GetSinkRemoved())
		}
	case ev.GetGeneration() != nil:
		gs := ev.GetGeneration()
		if gs.GetGeneration() >= v.gen {
			v.gen, v.hash = gs.GetGeneration(), gs.GetHash()
		}
		for i, old := range v.gens {
			if old.GetGeneration() == gs.GetGeneration() {
				v.gens[i] = gs
				return
			}
		}
		v.gens = append(v.gens, gs)
	}
}

// Ready says whether a snapshot came.
func (v *StatusView) Ready() bool { return v.ready }

// Revision is the revision of the last event applied.
func (v *StatusView) Revision() uint64 { return v.rev }

// Len is the number of sinks.
func (v *StatusView) Len() int { return len(v.sinks) }

// Sinks returns every sink's newest status, sorted by name.
func (v *StatusView) Sinks() []*confighubv1.SinkStatus {
	return slices.SortedFunc(maps.Values(v.sinks), func(a, b *confighubv1.SinkStatus) int { return strings.Compare(a.GetSink(), b.GetSink()) })
}

// Counts returns the counted sinks by Outcome for the target generation.
func (v *StatusView) Counts() (applied, rejected, pending int) {
	return v.counts[Applied], v.counts[Rejected], v.counts[Pending]
}

// Status is the view as GetStatus answers it.
func (v *StatusView) Status() *confighubv1.GetStatusResponse {
	return &confighubv1.GetStatusResponse{Revision: v.rev, Generation: v.gen, Hash: v.hash, Stream: v.stream,
		Sinks: v.Sinks(), Generations: append([]*confighubv1.GenerationStatus(nil), v.gens...)}
}
