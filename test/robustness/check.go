package robustness

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Invariant names one property the checker proves over a history.
type Invariant string

const (
	// Durable: every acknowledged generation is readable after each
	// restart with the same hash (the stream is at it or past it).
	Durable Invariant = "durable"
	// Monotonic: per stream, generations strictly increase in real time
	// and no generation is given to two different configurations.
	Monotonic Invariant = "monotonic"
	// Converged: every sink ends at its stream's last acknowledged
	// generation, or reports a permanent rejection of exactly it.
	Converged Invariant = "converged"
	// InOrder: no gateway loaded an older generation after a newer one.
	InOrder Invariant = "in-order"
	// WatchExact: a resumed watch misses no generation and repeats no
	// revision, and each watcher's view ends equal to GetStatus.
	WatchExact Invariant = "watch-exact"
	// GatewayHash: each gateway's configuration_hash is that of the
	// configuration its sink reports applied, the last acknowledged one.
	GatewayHash Invariant = "gateway-hash"
)

// Invariants is every invariant, in the order Check reports them.
var Invariants = []Invariant{Durable, Monotonic, Converged, InOrder, WatchExact, GatewayHash}

// Result is one invariant's verdict: Checked counts what it looked at,
// Violations says what broke (empty: it holds).
type Result struct {
	Invariant  Invariant
	Checked    int
	Violations []string
}

// OK reports whether the invariant holds.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// Check runs every invariant over h.
func Check(h *History) []Result {
	gens := h.generationOf()
	return []Result{
		checkDurable(h),
		checkMonotonic(h),
		checkConverged(h),
		checkInOrder(h, gens),
		checkWatches(h),
		checkGatewayHash(h),
	}
}

// FirstViolation is the first broken invariant and its first violation,
// or "" when all hold.
func FirstViolation(rs []Result) string {
	for _, r := range rs {
		if !r.OK() {
			return fmt.Sprintf("%s: %s", r.Invariant, r.Violations[0])
		}
	}
	return ""
}

const maxViolations = 20

func (r *Result) fail(format string, args ...any) {
	if len(r.Violations) < maxViolations {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	}
}

func (h *History) acked() []Push {
	var out []Push
	for _, p := range h.Pushes {
		if p.Acked() {
			out = append(out, p)
		}
	}
	return out
}

// lastAcked is each stream's acknowledged push with the highest
// generation.
func (h *History) lastAcked() map[string]Push {
	last := map[string]Push{}
	for _, p := range h.acked() {
		if q, ok := last[p.Stream]; !ok || p.Gen > q.Gen {
			last[p.Stream] = p
		}
	}
	return last
}

func checkDurable(h *History) Result {
	r := Result{Invariant: Durable}
	for i, rs := range h.Restarts {
		for _, p := range h.acked() {
			if !p.Return.Before(rs.Killed) {
				continue
			}
			r.Checked++
			o := rs.Streams[p.Stream]
			switch {
			case o.Gen == 0:
				r.fail("restart %d: stream %q not found, generation %d (%s) was acknowledged before the kill", i+1, p.Stream, p.Gen, short(p.AckHash))
			case o.Gen < p.Gen:
				r.fail("restart %d: stream %q at generation %d, generation %d (%s) was acknowledged before the kill", i+1, p.Stream, o.Gen, p.Gen, short(p.AckHash))
			case o.Gen == p.Gen && o.Hash != p.AckHash:
				r.fail("restart %d: stream %q generation %d has hash %s, acknowledged %s", i+1, p.Stream, p.Gen, short(o.Hash), short(p.AckHash))
			case o.Generations[p.Gen] != "" && o.Generations[p.Gen] != p.AckHash:
				r.fail("restart %d: stream %q lists generation %d with hash %s, acknowledged %s", i+1, p.Stream, p.Gen, short(o.Generations[p.Gen]), short(p.AckHash))
			}
		}
	}
	return r
}

func checkMonotonic(h *History) Result {
	r := Result{Invariant: Monotonic}
	byStream := map[string][]Push{}
	for _, p := range h.acked() {
		byStream[p.Stream] = append(byStream[p.Stream], p)
	}
	for _, s := range sortedKeys(byStream) {
		ps := byStream[s]
		owner := map[uint64]Push{}
		for _, p := range ps {
			r.Checked++
			if q, ok := owner[p.Gen]; ok && q.AckHash != p.AckHash {
				r.fail("stream %q generation %d given to two configurations: %s (pusher %d) and %s (pusher %d)", s, p.Gen, short(q.AckHash), q.Pusher, short(p.AckHash), p.Pusher)
			} else if !ok {
				owner[p.Gen] = p
			}
			if p.Expected != 0 && !p.Unchanged && p.Gen <= p.Expected {
				r.fail("stream %q: a push expecting generation %d was acknowledged as generation %d", s, p.Expected, p.Gen)
			}
		}
		// Real-time order: a push sent after another was answered gets a
		// higher generation (the same one only when unchanged).
		byReturn := slices.Clone(ps)
		slices.SortFunc(byReturn, func(a, b Push) int { return a.Return.Compare(b.Return) })
		byCall := slices.Clone(ps)
		slices.SortFunc(byCall, func(a, b Push) int { return a.Call.Compare(b.Call) })
		var before Push
		j := 0
		for _, p := range byCall {
			for ; j < len(byReturn) && byReturn[j].Return.Before(p.Call); j++ {
				if byReturn[j].Gen >= before.Gen {
					before = byReturn[j]
				}
			}
			if before.Gen == 0 {
				continue
			}
			if p.Gen < before.Gen || (p.Gen == before.Gen && !p.Unchanged) {
				r.fail("stream %q: pusher %d got generation %d (unchanged=%v) after pusher %d had been acknowledged generation %d", s, p.Pusher, p.Gen, p.Unchanged, before.Pusher, before.Gen)
			}
		}
	}
	return r
}

func checkConverged(h *History) Result {
	r := Result{Invariant: Converged}
	last := h.lastAcked()
	for _, gw := range sortedKeys(h.GatewayStream) {
		s := h.GatewayStream[gw]
		want, ok := last[s]
		if !ok {
			continue
		}
		r.Checked++
		st := findSink(h.FinalStatus[s], gw)
		switch {
		case st == nil:
			r.fail("sink %q of stream %q missing from the final status", gw, s)
		case st.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED && st.GetAppliedGeneration() == want.Gen:
		case st.GetState() == confighubv1.SinkState_SINK_STATE_FAILED && st.GetRejectedGeneration() == want.Gen:
		default:
			r.fail("sink %q of stream %q ends %s at applied generation %d (rejected %d), last acknowledged %d", gw, s, st.GetState(), st.GetAppliedGeneration(), st.GetRejectedGeneration(), want.Gen)
		}
	}
	return r
}

// generationOf maps a configuration hash to its generations (a hash
// pushed again after another one gets a new generation), from every answer
// and status the run saw: a push stored but not acknowledged, because the
// hub was killed, is known from a later status.
func (h *History) generationOf() map[string]map[string][]uint64 {
	m := map[string]map[string][]uint64{}
	put := func(stream, hash string, gen uint64) {
		if hash == "" || gen == 0 {
			return
		}
		if m[stream] == nil {
			m[stream] = map[string][]uint64{}
		}
		if !slices.Contains(m[stream][hash], gen) {
			m[stream][hash] = append(m[stream][hash], gen)
		}
	}
	for _, p := range h.acked() {
		put(p.Stream, p.AckHash, p.Gen)
	}
	for _, rs := range h.Restarts {
		for s, o := range rs.Streams {
			put(s, o.Hash, o.Gen)
			for g, hash := range o.Generations {
				put(s, hash, g)
			}
		}
	}
	for s, st := range h.FinalStatus {
		put(s, st.GetHash(), st.GetGeneration())
		for _, g := range st.GetGenerations() {
			put(s, g.GetHash(), g.GetGeneration())
		}
	}
	for _, w := range h.Watches {
		for _, ev := range w.Events {
			if g := ev.GetGeneration(); g != nil {
				put(w.Stream, g.GetHash(), g.GetGeneration())
			}
			for _, g := range ev.GetSnapshot().GetGenerations() {
				put(w.Stream, g.GetHash(), g.GetGeneration())
			}
		}
	}
	for _, byHash := range m {
		for _, gs := range byHash {
			slices.Sort(gs)
		}
	}
	return m
}

// contentHash maps a content marker to its hub hash.
func (h *History) contentHash() map[string]string {
	m := map[string]string{}
	for _, p := range h.Pushes {
		m[p.Content] = p.Hash
	}
	return m
}

func checkInOrder(h *History, gens map[string]map[string][]uint64) Result {
	r := Result{Invariant: InOrder}
	hashes := h.contentHash()
	for _, gw := range sortedKeys(h.Loads) {
		s := h.GatewayStream[gw]
		var top uint64
		for i, l := range h.Loads[gw] {
			if !l.Loaded() {
				continue
			}
			gs := gens[s][hashes[l.Content]]
			if len(gs) == 0 {
				continue // never acknowledged nor seen in a status
			}
			r.Checked++
			// The content's lowest generation not older than the last
			// one loaded (sorted: the first such).
			k := slices.IndexFunc(gs, func(g uint64) bool { return g >= top })
			if k < 0 {
				r.fail("gateway %q: request %d loaded generation %d after generation %d", gw, i+1, gs[len(gs)-1], top)
				continue
			}
			top = gs[k]
		}
	}
	return r
}

// published is, per stream, every generation some watcher got an event of.
func (h *History) published() map[string]map[uint64]bool {
	m := map[string]map[uint64]bool{}
	for _, w := range h.Watches {
		for _, ev := range w.Events {
			if g := ev.GetGeneration(); g != nil {
				if m[w.Stream] == nil {
					m[w.Stream] = map[uint64]bool{}
				}
				m[w.Stream][g.GetGeneration()] = true
			}
		}
	}
	return m
}

// Unpublished counts the acknowledged new generations no watcher got an
// event of while a watcher's epoch covered them: the hub superseded them
// before publishing them (two pushes acknowledged together).
func Unpublished(h *History) (n, of int) {
	pub := h.published()
	for _, p := range h.acked() {
		if p.Unchanged {
			continue
		}
		of++
		if !pub[p.Stream][p.Gen] {
			n++
		}
	}
	return n, of
}

// view is a watcher's picture of a stream: what its snapshot and events
// add up to.
type view struct {
	gen   uint64
	hash  string
	sinks map[string]*confighubv1.SinkStatus
}

func (v *view) apply(ev *confighubv1.WatchStatusResponse) {
	switch {
	case ev.GetSnapshot() != nil:
		snap := ev.GetSnapshot()
		v.gen, v.hash = snap.GetGeneration(), snap.GetHash()
		v.sinks = map[string]*confighubv1.SinkStatus{}
		for _, s := range snap.GetSinks() {
			v.sinks[s.GetSink()] = s
		}
	case ev.GetSink() != nil:
		v.sinks[ev.GetSink().GetSink()] = ev.GetSink()
	case ev.GetSinkRemoved() != "":
		delete(v.sinks, ev.GetSinkRemoved())
	case ev.GetGeneration() != nil:
		if g := ev.GetGeneration(); g.GetGeneration() >= v.gen {
			v.gen, v.hash = g.GetGeneration(), g.GetHash()
		}
	}
}

// diff says how v differs from a GetStatus answer ("" when equal).
func (v *view) diff(st *confighubv1.GetStatusResponse) string {
	if v.gen != st.GetGeneration() || v.hash != st.GetHash() {
		return fmt.Sprintf("watch at generation %d (%s), GetStatus at %d (%s)", v.gen, short(v.hash), st.GetGeneration(), short(st.GetHash()))
	}
	if len(v.sinks) != len(st.GetSinks()) {
		return fmt.Sprintf("watch has %d sinks, GetStatus %d", len(v.sinks), len(st.GetSinks()))
	}
	for _, s := range st.GetSinks() {
		w := v.sinks[s.GetSink()]
		if w == nil || w.GetState() != s.GetState() || w.GetAppliedGeneration() != s.GetAppliedGeneration() || w.GetDesiredGeneration() != s.GetDesiredGeneration() {
			return fmt.Sprintf("sink %q: watch %s applied %d desired %d, GetStatus %s applied %d desired %d", s.GetSink(),
				w.GetState(), w.GetAppliedGeneration(), w.GetDesiredGeneration(), s.GetState(), s.GetAppliedGeneration(), s.GetDesiredGeneration())
		}
	}
	return ""
}

// deliveryBound is how long before a watch epoch ends a generation must
// have been acknowledged to be owed to the watcher: a generation's event
// reaches watchers within a dispatch round (milliseconds), and one accepted
// just before a kill may die with the hub.
const deliveryBound = 2 * time.Second

// epoch is a watcher's run of events from one snapshot to the next, across
// the sessions that resumed without a snapshot.
type epoch struct {
	where   string
	from    uint64 // the snapshot's generation
	top     uint64 // the highest generation seen
	seen    map[uint64]bool
	end     time.Time
	isFinal bool
}

func checkWatches(h *History) Result {
	r := Result{Invariant: WatchExact}
	acceptedAt := map[string]map[uint64]time.Time{}
	for _, p := range h.acked() {
		if !p.Unchanged {
			if acceptedAt[p.Stream] == nil {
				acceptedAt[p.Stream] = map[uint64]time.Time{}
			}
			acceptedAt[p.Stream][p.Gen] = p.Return
		}
	}
	published := h.published()
	byWatcher := map[int][]WatchSession{}
	for _, w := range h.Watches {
		byWatcher[w.Watcher] = append(byWatcher[w.Watcher], w)
	}
	ids := make([]int, 0, len(byWatcher))
	for id := range byWatcher {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		var v *view
		var lastRev uint64
		var ep *epoch
		stream := ""
		// closeEpoch: every generation between the epoch's snapshot and
		// the highest it saw, that the hub published to a watcher of the
		// stream and acknowledged long enough before the epoch ended,
		// reached this watcher (the last epoch owes every one).
		closeEpoch := func() {
			if ep == nil {
				return
			}
			for g := ep.from + 1; g < ep.top; g++ {
				t, ok := acceptedAt[stream][g]
				if ep.seen[g] || !ok || !published[stream][g] || (!ep.isFinal && t.After(ep.end.Add(-deliveryBound))) {
					continue
				}
				r.fail("%s: generation %d (acknowledged %s before the epoch ended) was missed (the watcher saw %d to %d)", ep.where, g, ep.end.Sub(t).Round(time.Millisecond), ep.from, ep.top)
			}
		}
		sessions := byWatcher[id]
		for si, sess := range sessions {
			stream = sess.Stream
			for ei, ev := range sess.Events {
				r.Checked++
				where := fmt.Sprintf("watcher %d session %d (from revision %d) message %d", id, si+1, sess.From, ei+1)
				if ev.GetSnapshot() != nil {
					closeEpoch()
					snap := ev.GetSnapshot()
					ep = &epoch{where: where, from: snap.GetGeneration(), top: snap.GetGeneration(), seen: map[uint64]bool{}}
					v = &view{}
					v.apply(ev)
					lastRev = ev.GetRevision()
					continue
				}
				if v == nil {
					r.fail("%s: an event before any snapshot", where)
					continue
				}
				if ei == 0 && sess.From != lastRev {
					r.fail("%s: resumed from revision %d, last seen %d", where, sess.From, lastRev)
				}
				if ev.GetRevision() <= lastRev {
					r.fail("%s: revision %d repeats or goes back (last %d)", where, ev.GetRevision(), lastRev)
				}
				if g := ev.GetGeneration(); g != nil {
					ep.seen[g.GetGeneration()] = true
					ep.top = max(ep.top, g.GetGeneration())
				}
				lastRev = max(lastRev, ev.GetRevision())
				v.apply(ev)
			}
			if ep != nil {
				ep.end = sess.End
				ep.isFinal = si == len(sessions)-1
			}
		}
		closeEpoch()
		fin, ok := h.FinalWatchers[id]
		if !ok {
			continue
		}
		r.Checked++
		if v == nil {
			r.fail("watcher %d: no snapshot at all", id)
		} else if d := v.diff(fin.Status); d != "" {
			r.fail("watcher %d of stream %q: its last event disagrees with GetStatus: %s", id, fin.Stream, d)
		}
	}
	return r
}

func checkGatewayHash(h *History) Result {
	r := Result{Invariant: GatewayHash}
	hashes := h.contentHash()
	emu := map[string]string{} // content -> emulator hash of the body its sinks sent
	for _, ls := range h.Loads {
		for _, l := range ls {
			if l.Loaded() {
				emu[l.Content] = l.EmuHash
			}
		}
	}
	last := h.lastAcked()
	for _, gw := range sortedKeys(h.FinalGateways) {
		s := h.GatewayStream[gw]
		want, ok := last[s]
		if !ok {
			continue
		}
		r.Checked++
		// A rejected last generation leaves the gateway on the last one
		// its sink applied.
		wantHash := want.AckHash
		if st := findSink(h.FinalStatus[s], gw); st != nil && st.GetState() == confighubv1.SinkState_SINK_STATE_FAILED {
			wantHash = st.GetAppliedHash()
		}
		fin := h.FinalGateways[gw]
		switch {
		case hashes[fin.Content] != wantHash:
			r.fail("gateway %q runs content %q (%s), its sink's last acknowledged configuration is %s", gw, fin.Content, short(hashes[fin.Content]), short(wantHash))
		case fin.Hash != emu[fin.Content]:
			r.fail("gateway %q reports configuration_hash %s, the body it loaded hashes to %s", gw, fin.Hash, emu[fin.Content])
		}
	}
	return r
}

func findSink(st *confighubv1.GetStatusResponse, name string) *confighubv1.SinkStatus {
	for _, s := range st.GetSinks() {
		if s.GetSink() == name {
			return s
		}
	}
	return nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, cmp.Compare)
	return ks
}
