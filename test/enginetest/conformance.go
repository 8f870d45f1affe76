package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/sink"
)

// Kind is the sink kind an Env registers for Run: fake sinks of a Fleet.
const Kind = "conformance"

// Env is one way of running the engine under the conformance suite: one
// engine alone, or several replicas' engines, each with its ownership
// predicate, sharing their statuses through etcd. What a test observes
// goes through View, as a client's GetStatus and WatchStatus do.
type Env interface {
	// Set gives the sink of that name behaviour b, wherever it runs and is
	// built from now on.
	Set(name string, b Behavior)
	// PutSink puts a sink of kind Kind on stream "default".
	PutSink(t *testing.T, name string, o *confighubv1.SinkOptions)
	// DeleteSink deletes a sink.
	DeleteSink(t *testing.T, name string)
	// Push makes a configuration built from content the stream's next
	// generation and returns it.
	Push(t *testing.T, content string) uint64
	// View is what clients read (on replicas: one replica's view, whose
	// engine runs only some of the sinks).
	View() status.View
	// Converged is how many times gen was observed converged (the
	// convergence histogram), summed over the engines.
	Converged(gen uint64) int
}

// Run runs the engine conformance suite: behaviour that holds in both
// modes, observed through the status view. newEnv returns a fresh,
// empty Env and registers its cleanup.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Run("NewestGenerationConvergesOnce", func(t *testing.T) { testConverges(t, newEnv(t)) })
	t.Run("PermanentRejection", func(t *testing.T) { testRejection(t, newEnv(t)) })
	t.Run("WaveRejectionStopsLaterWaves", func(t *testing.T) { testWaves(t, newEnv(t)) })
	t.Run("DeleteSinkRemovesItsStatus", func(t *testing.T) { testDelete(t, newEnv(t)) })
	t.Run("WatchResumesWithChanges", func(t *testing.T) { testWatchResume(t, newEnv(t)) })
}

// Await returns the stream "default"'s status once cond holds, waking at
// each change of the view; it fails the test after 20 s (the replicas'
// etcd round trips) naming what.
func Await(t *testing.T, v status.View, what string, cond func(*confighubv1.GetStatusResponse) bool) *confighubv1.GetStatusResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := v.Watch(ctx, "default", 0)
	var last *confighubv1.GetStatusResponse
	for {
		if s, ok := v.Snapshot("default"); ok {
			last = s
			if cond(s) {
				return s
			}
		}
		select {
		case _, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					t.Fatalf("timed out waiting for %s; last status: %v", what, last)
				}
				ch = v.Watch(ctx, "default", 0)
			}
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; last status: %v", what, last)
		}
	}
}

// SinkOf returns the named sink's status in s, nil if none.
func SinkOf(s *confighubv1.GetStatusResponse, name string) *confighubv1.SinkStatus {
	for _, st := range s.GetSinks() {
		if st.GetSink() == name {
			return st
		}
	}
	return nil
}

func genOf(s *confighubv1.GetStatusResponse, gen uint64) *confighubv1.GenerationStatus {
	for _, g := range s.GetGenerations() {
		if g.GetGeneration() == gen {
			return g
		}
	}
	return nil
}

func allApplied(names []string, gen uint64) func(*confighubv1.GetStatusResponse) bool {
	return func(s *confighubv1.GetStatusResponse) bool {
		for _, n := range names {
			if SinkOf(s, n).GetAppliedGeneration() < gen {
				return false
			}
		}
		return true
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i)
	}
	return out
}

// testConverges: every sink ends at the newest generation; its
// generation status counts every sink and converges; the convergence is
// observed once over all engines.
func testConverges(t *testing.T, env Env) {
	sinks := names(6)
	for _, n := range sinks {
		env.PutSink(t, n, nil)
	}
	var last uint64
	for i := range 3 {
		last = env.Push(t, fmt.Sprint("c", i))
	}
	s := Await(t, env.View(), fmt.Sprintf("generation %d converged", last), func(s *confighubv1.GetStatusResponse) bool {
		return allApplied(sinks, last)(s) && genOf(s, last).GetConvergeTime() != nil
	})
	if g := genOf(s, last); g.GetSinksApplied() != 6 || g.GetSinksTotal() != 6 || s.GetGeneration() != last {
		t.Errorf("generation status %v (stream at %d), want 6 of 6 sinks at %d", g, s.GetGeneration(), last)
	}
	if c := env.Converged(last); c != 1 {
		t.Errorf("generation %d observed converged %d times, want once", last, c)
	}
	for gen := uint64(1); gen < last; gen++ {
		if c := env.Converged(gen); c > 1 {
			t.Errorf("generation %d observed converged %d times", gen, c)
		}
	}
}

// testRejection: a permanent error leaves the sink FAILED with
// rejected_generation, the generation does not converge, and a new
// generation is tried at once.
func testRejection(t *testing.T, env Env) {
	env.Set("bad", Behavior{Err: &sink.Error{Code: sink.CodeRejected, Message: "route r1 is invalid", Permanent: true}})
	for _, n := range []string{"bad", "ok1", "ok2"} {
		env.PutSink(t, n, nil)
	}
	g1 := env.Push(t, "one")
	s := Await(t, env.View(), "bad rejected generation 1", func(s *confighubv1.GetStatusResponse) bool {
		b := SinkOf(s, "bad")
		// On replicas the generation's counts (its leader's) may come a
		// writer interval after the sinks' statuses.
		return b.GetState() == confighubv1.SinkState_SINK_STATE_FAILED && b.GetRejectedGeneration() == g1 &&
			allApplied([]string{"ok1", "ok2"}, g1)(s) && genOf(s, g1).GetSinksApplied() == 2
	})
	if b := SinkOf(s, "bad"); b.GetLastErrorCode() != string(sink.CodeRejected) || !strings.Contains(b.GetLastError(), "route r1 is invalid") {
		t.Errorf("bad's status %v, want code rejected and the message", b)
	}
	if g := genOf(s, g1); g.GetSinksApplied() != 2 || g.GetConvergeTime() != nil {
		t.Errorf("generation 1 status %v, want 2 of 3 applied, not converged", g)
	}
	env.Set("bad", Behavior{})
	g2 := env.Push(t, "two")
	Await(t, env.View(), "generation 2 applied by every sink", allApplied([]string{"bad", "ok1", "ok2"}, g2))
}

// testWaves: a generation rejected by wave 0 never reaches wave 1, which
// reports SKIPPED; the next generation re-opens the gate. The waves may
// run on different replicas: the gate reads the shared statuses.
func testWaves(t *testing.T, env Env) {
	env.Set("w0", Behavior{Err: &sink.Error{Code: sink.CodeRejected, Message: "bad route", Permanent: true}})
	env.PutSink(t, "w0", nil)
	env.PutSink(t, "w1", &confighubv1.SinkOptions{Gate: confighubv1.Gate_GATE_WAVE, Wave: 1})
	g1 := env.Push(t, "one")
	s := Await(t, env.View(), "wave 1 skipped generation 1", func(s *confighubv1.GetStatusResponse) bool {
		w := SinkOf(s, "w1")
		return w.GetState() == confighubv1.SinkState_SINK_STATE_SKIPPED && w.GetDesiredGeneration() == g1
	})
	if w := SinkOf(s, "w1"); w.GetAppliedGeneration() != 0 {
		t.Errorf("wave 1 applied generation %d of a generation wave 0 rejected", w.GetAppliedGeneration())
	}
	env.Set("w0", Behavior{})
	g2 := env.Push(t, "two")
	Await(t, env.View(), "both waves applied generation 2", allApplied([]string{"w0", "w1"}, g2))
}

// testDelete: a deleted sink's status goes; the generation counts the
// sinks left.
func testDelete(t *testing.T, env Env) {
	env.PutSink(t, "a", nil)
	env.PutSink(t, "b", nil)
	g := env.Push(t, "one")
	Await(t, env.View(), "both applied", allApplied([]string{"a", "b"}, g))
	env.DeleteSink(t, "b")
	Await(t, env.View(), "b gone and generation 1 counts one sink", func(s *confighubv1.GetStatusResponse) bool {
		return SinkOf(s, "b") == nil && len(s.GetSinks()) == 1 && genOf(s, g).GetSinksTotal() == 1
	})
}

// testWatchResume: a watch starts with a snapshot; one resumed from its
// revision gets the changes after it, not a snapshot.
func testWatchResume(t *testing.T, env Env) {
	env.PutSink(t, "a", nil)
	g1 := env.Push(t, "one")
	s := Await(t, env.View(), "generation 1 applied", allApplied([]string{"a"}, g1))
	from := s.GetRevision()
	g2 := env.Push(t, "two")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := env.View().Watch(ctx, "default", from)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("watch from %d ended before generation %d was applied", from, g2)
			}
			if m.GetSnapshot() != nil {
				t.Fatalf("watch resumed from %d got a snapshot (%s), want the changes", from, m.GetSnapshotReason())
			}
			if m.GetRevision() <= from {
				t.Fatalf("change at revision %d, resumed after %d", m.GetRevision(), from)
			}
			if st := m.GetSink(); st.GetSink() == "a" && st.GetAppliedGeneration() == g2 {
				return
			}
		case <-ctx.Done():
			t.Fatalf("watch from %d: generation %d not applied within 20s", from, g2)
		}
	}
}
