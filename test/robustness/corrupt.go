package robustness

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Corrupt breaks one recorded answer of h so that inv no longer holds: the
// proof, on a real run's history, that the checker catches it
// (-robustness.break). It fails when h has nothing to corrupt for inv.
func Corrupt(h *History, inv Invariant) error {
	switch inv {
	case Durable:
		// The last restart serves another hash for a generation acknowledged
		// before it.
		for i := len(h.Restarts) - 1; i >= 0; i-- {
			rs := &h.Restarts[i]
			for _, p := range h.acked() {
				if p.Return.Before(rs.Killed) {
					rs.Streams[p.Stream] = Observation{Gen: p.Gen, Hash: "corrupted"}
					return nil
				}
			}
		}
	case Monotonic:
		// A late answer gives an early generation to another configuration.
		if len(h.Restarts) > 0 {
			for _, p := range h.acked() {
				q := p
				q.AckHash, q.Unchanged = "corrupted", false
				q.Return = h.Restarts[len(h.Restarts)-1].Killed.Add(1)
				q.Call = q.Return
				h.Pushes = append(h.Pushes, q)
				return nil
			}
		}
	case Converged:
		// A sink's final status one generation short.
		for _, s := range sortedKeys(h.FinalStatus) {
			st := proto.Clone(h.FinalStatus[s]).(*confighubv1.GetStatusResponse)
			for _, sk := range st.GetSinks() {
				if sk.GetAppliedGeneration() > 0 {
					sk.State = confighubv1.SinkState_SINK_STATE_APPLIED
					sk.AppliedGeneration--
					h.FinalStatus[s] = st
					return nil
				}
			}
		}
	case InOrder:
		// A gateway loads its first known generation again at the end.
		gens, hashes := h.generationOf(), h.contentHash()
		for _, gw := range sortedKeys(h.Loads) {
			s := h.GatewayStream[gw]
			var first Load
			var lo, hi uint64
			for _, l := range h.Loads[gw] {
				gs := gens[s][hashes[l.Content]]
				if !l.Loaded() || len(gs) != 1 {
					continue
				}
				g := gs[0]
				if lo == 0 {
					first, lo = l, g
				}
				hi = max(hi, g)
			}
			if lo != 0 && lo < hi {
				h.Loads[gw] = append(h.Loads[gw], first)
				return nil
			}
		}
	case WatchExact:
		// A watch receives one event twice.
		for i := range h.Watches {
			w := &h.Watches[i]
			for j, ev := range w.Events {
				if ev.GetSnapshot() == nil {
					w.Events = append(w.Events[:j+1:j+1], append([]*confighubv1.WatchStatusResponse{ev}, w.Events[j+1:]...)...)
					return nil
				}
			}
		}
	case GatewayHash:
		for _, gw := range sortedKeys(h.FinalGateways) {
			f := h.FinalGateways[gw]
			f.Hash = "corrupted"
			h.FinalGateways[gw] = f
			return nil
		}
	default:
		return fmt.Errorf("no invariant %q (one of %v)", inv, Invariants)
	}
	return fmt.Errorf("the history has nothing to corrupt for %s", inv)
}
