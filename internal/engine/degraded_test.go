package engine_test

import (
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
)

// TestDegradedSinkIsNotConverged: a sink.Degraded shows DEGRADED with the
// excluded entities and the fallback's hash, the generation rejected and
// not converged, not retried; a later generation whose hash is the last
// one applied whole is applied (not skipped: the destination holds the
// fallback), and returns the sink to APPLIED with the fallback cleared.
func TestDegradedSinkIsNotConverged(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	first := h.push("", "whole")
	h.awaitApplied("a", 1)

	ex := []*confighubv1.ExcludedEntity{{EntityType: "route", EntityName: "r", EntityTags: []string{"k8s-name:r"}, Message: "colour: unknown field"}}
	rej := &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: "gateway rejected",
		EntityErrors: []*confighubv1.EntityError{{EntityType: "route", EntityName: "r"}}}
	s.Set(enginetest.Behavior{Err: &sink.Degraded{Hash: "fallback-hash", Excluded: ex, Rejection: rej}})
	h.push("", "broken")
	st := h.awaitState("a", confighubv1.SinkState_SINK_STATE_DEGRADED, 2)
	if st.GetAppliedGeneration() != 1 || st.GetRejectedGeneration() != 2 || st.GetFallbackGeneration() != 2 ||
		st.GetFallbackHash() != "fallback-hash" || st.GetAppliedHash() != "fallback-hash" ||
		len(st.GetExcludedEntities()) != 1 || st.GetLastErrorCode() != "rejected" || len(st.GetEntityErrors()) != 1 {
		t.Fatalf("degraded status %v", st)
	}
	gs := h.await("default", "generation 2 not converged", func(r *confighubv1.GetStatusResponse) bool {
		for _, g := range r.GetGenerations() {
			if g.GetGeneration() == 2 {
				return true
			}
		}
		return false
	})
	for _, g := range gs.GetGenerations() {
		if g.GetGeneration() == 2 && (g.GetSinksApplied() != 0 || g.GetConvergeTime() != nil) {
			t.Fatalf("generation 2 counted as applied: %v", g)
		}
	}
	calls := s.Calls()
	h.clock.Advance(time.Hour)
	h.e.Publish(h.e.Current("default")) // same generation: not retried
	if s.Calls() != calls {
		t.Fatalf("degraded generation retried: %d calls, was %d", s.Calls(), calls)
	}

	s.Set(enginetest.Behavior{})
	h.push("", "whole") // the hash of generation 1, applied whole before
	st = h.awaitApplied("a", 3)
	if s.Calls() != calls+1 {
		t.Fatalf("generation 3 (hash %s of generation 1) was skipped while the destination held a fallback", first.Hash)
	}
	if st.GetState() != confighubv1.SinkState_SINK_STATE_APPLIED || len(st.GetExcludedEntities()) != 0 ||
		st.GetFallbackHash() != "" || st.GetFallbackGeneration() != 0 || st.GetAppliedHash() != first.Hash {
		t.Fatalf("after the whole applied: %v", st)
	}
}
