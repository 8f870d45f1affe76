package engine

import (
	"cmp"
	"slices"
	"strings"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/sinkspec"
	"github.com/confighub/confighub/sink"
)

// Ownership decides which sinks run here (others' are peers, see ObserveSink)
// and which streams this replica leads; the default owns everything.
type Ownership interface {
	OwnsSink(name string) bool
	OwnsStream(name string) bool
	// OwnerOf names the replica that runs a sink ("" when unknown).
	OwnerOf(sink string) string
}

type ownAll struct{}

func (ownAll) OwnsSink(string) bool   { return true }
func (ownAll) OwnsStream(string) bool { return true }
func (ownAll) OwnerOf(string) string  { return "" }

// WithOwnership sets which sinks run here; Reown applies a change of it.
func WithOwnership(o Ownership) Option { return func(e *Engine) { e.own = cmp.Or(o, e.own) } }

// member is one sink of a stream, run here (w) or a peer (shared). Guarded by Engine.mu.
type member struct {
	name     string
	spec     *confighubv1.Sink
	opts     sinkspec.Options
	gateway  bool
	st       *stream
	specSize int // proto.Size(spec), counted in Engine.specBytes
	w        *worker
	shared   *confighubv1.SinkStatus
}

func (m *member) appliedGen() uint64 {
	if m.w != nil {
		return m.w.m.appliedGen
	}
	return m.shared.GetAppliedGeneration()
}

func (m *member) lastApplied() time.Time {
	if m.w != nil {
		return m.w.lastAppliedTime
	}
	return m.shared.GetLastAppliedTime().AsTime()
}

// refusal names the sink whose rejection made m refuse gen, "" if none.
func (m *member) refusal(gen uint64) string {
	if m.w != nil {
		return m.w.m.refusal(m.name, gen)
	}
	st := m.shared
	if st.GetRejectedGeneration() == gen ||
		(st.GetState() == stateSkipped && st.GetDesiredGeneration() == gen && st.GetAppliedGeneration() < gen) {
		return m.name
	}
	return ""
}

// ObserveSink takes a sink's newest shared status (nil: removed): a peer
// counts by it; a sink run here is seeded by it if handed back.
func (e *Engine) ObserveSink(name string, st *confighubv1.SinkStatus) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st == nil {
		delete(e.remote, name)
	} else {
		e.remote[name] = st
	}
	m := e.sinks[name]
	if m == nil || m.w != nil {
		return
	}
	prev := m.appliedGen()
	m.shared = nil
	if st.GetStream() == m.st.name {
		m.shared = st
	}
	e.recount(m.st, 0, prev, m.appliedGen())
	if m.shared != nil {
		e.broker.PutSink(st)
	} else {
		e.broker.RemoveSink(m.st.name, name)
	}
}

// ObserveGeneration takes the leader's convergence time for a stream not led here.
func (e *Engine) ObserveGeneration(stream string, gs *confighubv1.GenerationStatus) {
	if gs.GetConvergeTime() == nil || e.own.OwnsStream(stream) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.streams[stream]
	if st == nil {
		return
	}
	t := gs.GetConvergeTime().AsTime()
	for _, g := range st.gens {
		if g.gen == gs.GetGeneration() {
			g.counted = true
			if !g.converge.Equal(t) {
				g.converge = t
				e.broker.PutGeneration(st.name, g.proto(len(st.sinks)))
			}
			return
		}
	}
}

// Reown applies a change of Ownership to the named sinks, or to every sink
// when none is named: sinks gained start, sinks lost become peers,
// convergences of streams now led here count. It returns start errors.
// A data plane's claim names one sink, so a fleet that redials does not
// re-place every sink at every claim.
func (e *Engine) Reown(names ...string) map[string]error {
	e.mu.Lock()
	var change []*confighubv1.Sink
	check := func(name string, m *member) {
		if m != nil && (m.w != nil) != e.own.OwnsSink(name) {
			change = append(change, m.spec)
		}
	}
	if len(names) == 0 {
		for name, m := range e.sinks {
			check(name, m)
		}
	}
	for _, name := range names {
		check(name, e.sinks[name])
	}
	e.mu.Unlock()
	errs := map[string]error{}
	if len(change) > 0 {
		defer e.logOwned()
	}
	for _, s := range change {
		if _, _, err := e.PutSink(s); err != nil {
			errs[s.GetName()] = err
			e.log.Error("starting an owned sink failed", "sink", s.GetName(), "error", err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, st := range e.streams {
		for _, g := range st.gens {
			if g.unled && !g.counted && !g.converge.IsZero() && e.own.OwnsStream(st.name) {
				e.countConverged(st, g, true)
			}
		}
	}
	return errs
}

// putPeer makes norm's sink a peer, stopping old's worker. Name lock held.
func (e *Engine) putPeer(norm *confighubv1.Sink, opts sinkspec.Options, kind sink.Kind, old *member) error {
	if old != nil && old.w != nil {
		e.removeWorker(old.w, true)
		e.log.Info("sink handed over", "sink", old.name, "kind", old.w.kind, "stream", old.st.name, "to", e.own.OwnerOf(old.name))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrStopped
	}
	if prev := e.sinks[norm.GetName()]; prev != nil {
		e.unregister(prev, prev.st.name != norm.GetStream())
	}
	m := &member{name: norm.GetName(), spec: norm, opts: opts, gateway: kind.Gateway, st: e.stream(norm.GetStream())}
	if st := e.remote[m.name]; st.GetStream() == m.st.name {
		m.shared = st
		e.broker.PutSink(st)
	}
	e.register(m)
	return nil
}

// logOwned logs the sinks run here when the set changed, on replicas only.
func (e *Engine) logOwned() {
	if _, all := e.own.(ownAll); all {
		return
	}
	e.mu.Lock()
	var names []string
	for name, m := range e.sinks {
		if m.w != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	line := strings.Join(names, ",")
	changed := line != e.ownedLogged
	e.ownedLogged = line
	peers := len(e.sinks) - len(names)
	e.mu.Unlock()
	if changed {
		e.log.Info("sinks owned", "count", len(names), "owned", "["+line+"]", "peers", peers)
	}
}
