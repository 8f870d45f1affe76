package engine

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/sinkspec"
	"github.com/confighub/confighub/sink"
)

// Ownership decides, on a hub replica, which sinks run here and which
// streams this replica leads. The engine keeps every sink; it runs a
// worker for the sinks it owns and follows the others (peers) through
// ObserveSink. The leader of a stream records its convergence (the
// metric), so summed over replicas each generation is counted once.
// Single node: everything (the default).
type Ownership interface {
	OwnsSink(name string) bool
	OwnsStream(name string) bool
	// OwnerOf names the replica that runs a sink ("" when unknown), named
	// in the log line of a hand-over.
	OwnerOf(sink string) string
}

type ownAll struct{}

func (ownAll) OwnsSink(string) bool   { return true }
func (ownAll) OwnsStream(string) bool { return true }
func (ownAll) OwnerOf(string) string  { return "" }

// WithOwnership sets which sinks run here (see Ownership); Reown applies
// a change of it.
func WithOwnership(o Ownership) Option {
	return func(e *Engine) {
		if o != nil {
			e.own = o
		}
	}
}

// peer is a sink that another replica runs: its spec, and its newest
// status from the shared view. Guarded by Engine.mu.
type peer struct {
	name    string
	spec    *confighubv1.Sink
	opts    sinkspec.Options
	gateway bool
	st      *stream
	status  *confighubv1.SinkStatus
	// specSize is proto.Size(spec), as counted in Engine.specBytes.
	specSize int
}

func (p *peer) appliedGen() uint64 { return p.status.GetAppliedGeneration() }

// rejecter names the sink at the origin of p's refusal of gen: p itself
// when it rejected gen, or skipped it (the peer's status does not name
// the sink it skipped for).
func (p *peer) rejecter(gen uint64) string {
	st := p.status
	if st.GetRejectedGeneration() == gen ||
		(st.GetState() == stateSkipped && st.GetDesiredGeneration() == gen && st.GetAppliedGeneration() < gen) {
		return p.name
	}
	return ""
}

// addPeer registers p with the newest status seen of it, which the local
// broker shows too: a replica's broker holds every sink of its streams
// (the statuses of peers as the shared view has them), so its generation
// counts never run ahead of its sink statuses. e.mu is held.
func (e *Engine) addPeer(p *peer) {
	if st := e.remote[p.name]; st.GetStream() == p.st.name {
		p.status = st
		e.broker.PutSink(st)
	}
	e.peers[p.name] = p
	p.specSize = proto.Size(p.spec)
	e.specBytes += p.specSize
	p.st.peers[p.name] = p
	p.st.waves[p.opts.Wave]++
	e.join(p.st, p.appliedGen())
	e.kickWaiters(p.st)
}

// removePeer unregisters p (and its status, with removeStatus). e.mu is
// held.
func (e *Engine) removePeer(p *peer, removeStatus bool) {
	delete(e.peers, p.name)
	e.specBytes -= p.specSize
	delete(p.st.peers, p.name)
	if p.st.waves[p.opts.Wave]--; p.st.waves[p.opts.Wave] == 0 {
		delete(p.st.waves, p.opts.Wave)
	}
	e.leave(p.st, p.appliedGen())
	if removeStatus {
		e.broker.RemoveSink(p.st.name, p.name)
	}
	e.kickWaiters(p.st)
}

// ObserveSink takes the newest status of a sink from the shared view (nil:
// its status was removed). A sink run elsewhere counts for the generation
// statuses and the gates by it; the status of a sink run here is kept
// only to seed its worker if this replica later hands it over and gets it
// back.
func (e *Engine) ObserveSink(name string, st *confighubv1.SinkStatus) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st == nil {
		delete(e.remote, name)
	} else {
		e.remote[name] = st
	}
	p := e.peers[name]
	if p == nil {
		return
	}
	prev := p.appliedGen()
	if st.GetStream() == p.st.name {
		p.status = st
	} else {
		p.status = nil
	}
	if cur := p.appliedGen(); cur != prev {
		e.appliedMoved(p.st, prev, cur)
	}
	if p.status != nil {
		e.broker.PutSink(p.status)
	} else {
		e.broker.RemoveSink(p.st.name, name)
	}
	e.kickWaiters(p.st)
}

// ObserveGeneration takes a generation's status from the shared view: on
// a replica that does not lead the stream, the leader's convergence time
// replaces the one seen here, so it is the same on every replica and stays
// the same when another replica takes the lead; the leader counted it.
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
	for _, g := range st.gens {
		if g.gen != gs.GetGeneration() {
			continue
		}
		t := gs.GetConvergeTime().AsTime()
		g.counted = true
		if !g.converge.Equal(t) {
			g.converge = t
			e.broker.PutGeneration(st.name, g.proto())
		}
		return
	}
}

// countUnled counts, on the streams this replica leads now, the
// generations it saw converge while another replica led them and whose
// leader's count never reached the shared view (it died first). e.mu is
// held.
func (e *Engine) countUnled() {
	for _, st := range e.streams {
		if !e.own.OwnsStream(st.name) {
			continue
		}
		for _, g := range st.gens {
			if g.unled && !g.counted && !g.converge.IsZero() {
				e.countConverged(st, g, true)
			}
		}
	}
}

// Reown applies a change of Ownership: the sinks gained start (seeded with
// their restored record or their last shared status), the sinks lost stop
// and are followed as peers. It returns the start errors by sink.
func (e *Engine) Reown() map[string]error {
	e.mu.Lock()
	var change []*confighubv1.Sink
	for name, w := range e.sinks {
		if !e.own.OwnsSink(name) {
			change = append(change, w.spec)
		}
	}
	for name, p := range e.peers {
		if e.own.OwnsSink(name) {
			change = append(change, p.spec)
		}
	}
	e.mu.Unlock()
	errs := map[string]error{}
	defer e.logOwned()
	defer func() {
		e.mu.Lock()
		e.countUnled()
		e.mu.Unlock()
	}()
	for _, s := range change {
		if _, _, err := e.PutSink(s); err != nil {
			errs[s.GetName()] = err
			e.log.Error("starting an owned sink failed", "sink", s.GetName(), "error", err)
		}
	}
	return errs
}

// putPeer makes the sink of norm a peer (stopping its worker here, if
// any). Its name lock is held.
func (e *Engine) putPeer(norm *confighubv1.Sink, opts sinkspec.Options, kind sink.Kind, old *worker) (*confighubv1.Sink, bool, error) {
	if old != nil {
		e.removeWorker(old, true)
		// It goes on running elsewhere: a hand-over, not a deletion.
		e.log.Info("sink handed over", "sink", old.name, "kind", old.kind, "stream", old.st.name, "to", e.own.OwnerOf(old.name))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil, false, ErrStopped
	}
	prev := e.peers[norm.GetName()]
	if prev != nil {
		e.removePeer(prev, prev.st.name != norm.GetStream())
	}
	e.addPeer(&peer{name: norm.GetName(), spec: norm, opts: opts, gateway: kind.Gateway, st: e.stream(norm.GetStream())})
	return proto.Clone(norm).(*confighubv1.Sink), old == nil && prev == nil, nil
}

// logOwned logs the sinks run here when the set changed, on replicas
// (with an Ownership) only.
func (e *Engine) logOwned() {
	if _, all := e.own.(ownAll); all {
		return
	}
	e.mu.Lock()
	names := make([]string, 0, len(e.sinks))
	for name := range e.sinks {
		names = append(names, name)
	}
	slices.Sort(names)
	line := strings.Join(names, ",")
	changed := line != e.ownedLogged
	e.ownedLogged = line
	peers := len(e.peers)
	e.mu.Unlock()
	if changed {
		e.log.Info("sinks owned", "count", len(names), "owned", "["+line+"]", "peers", peers)
	}
}
