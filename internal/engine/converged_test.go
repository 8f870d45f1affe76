package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/test/enginetest"
)

// convRecorder records applies and convergences, and counts the
// convergences the metrics observed.
type convRecorder struct {
	engine.NopMetrics
	mu       sync.Mutex
	conv     []store.Converged
	observed []time.Duration
	got      chan store.Converged
}

func (r *convRecorder) RecordApplied(context.Context, store.Applied) error { return nil }

func (r *convRecorder) RecordConverged(_ context.Context, c store.Converged) error {
	r.mu.Lock()
	r.conv = append(r.conv, c)
	r.mu.Unlock()
	r.got <- c
	return nil
}

func (r *convRecorder) StreamConverged(_ string, _ uint64, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed = append(r.observed, d)
}

func (r *convRecorder) observations() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.observed...)
}

func newConvHarness(t *testing.T) (*harness, *convRecorder) {
	rec := &convRecorder{got: make(chan store.Converged, 10)}
	return newHarness(t, engine.WithRecorder(rec), engine.WithMetrics(rec)), rec
}

// restarted is a generation accepted at t0, applied by sink a 42 ms later,
// before a restart one minute on.
func restarted(h *harness) *config.Config {
	cfg := enginetest.Config("default", 7, "restored", t0)
	h.clock.Advance(time.Minute)
	h.e.Restore([]store.Applied{{Sink: "a", Stream: "default", Generation: 7, Hash: cfg.Hash, Time: t0.Add(42 * time.Millisecond)}})
	return cfg
}

// TestConvergenceObservedOnceAndRecorded: a generation converges when its
// last sink applies it: the metrics observe accept-to-converge once and
// the recorder gets the same time.
func TestConvergenceObservedOnceAndRecorded(t *testing.T) {
	h, rec := newConvHarness(t)
	h.put("a", kindTest, nil)
	s := h.put("b", kindTest, nil)
	s.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	h.awaitApplied("a", 1)
	started(t, s)
	h.clock.Advance(42 * time.Millisecond)
	h.release(s)
	h.awaitApplied("b", 1)
	c := <-rec.got
	if c.Stream != "default" || c.Generation != 1 || !c.Time.Equal(t0.Add(42*time.Millisecond)) {
		t.Fatalf("recorded %+v, want generation 1 converged at t0+42ms", c)
	}
	if got := rec.observations(); len(got) != 1 || got[0] != 42*time.Millisecond {
		t.Fatalf("observed %v, want [42ms]", got)
	}
}

// TestRestoredConvergenceKeepsItsTime: after a restart, the generation
// whose convergence was recorded shows that time, not the restart's, and
// is not observed again.
func TestRestoredConvergenceKeepsItsTime(t *testing.T) {
	h, rec := newConvHarness(t)
	cfg := restarted(h)
	h.e.RestoreConverged([]store.Converged{{Stream: "default", Generation: 7, Time: t0.Add(42 * time.Millisecond)}})
	h.e.Publish(cfg)
	h.put("a", kindTest, nil)
	h.awaitApplied("a", 7)
	snap, _ := h.e.View().Snapshot("default")
	g := snap.GetGenerations()[0]
	if d := g.GetConvergeTime().AsTime().Sub(g.GetAcceptTime().AsTime()); d != 42*time.Millisecond {
		t.Fatalf("converged in %v after the restart, want 42ms", d)
	}
	if got := rec.observations(); len(got) != 0 {
		t.Fatalf("the restart observed the convergence again: %v", got)
	}
}

// TestRestoredConvergenceWithoutRecord: a restart that finds no record
// (lost in a crash) takes the last restored apply as the time, observes
// nothing, and records it so the next restart shows the same.
func TestRestoredConvergenceWithoutRecord(t *testing.T) {
	h, rec := newConvHarness(t)
	h.e.Publish(restarted(h))
	h.put("a", kindTest, nil)
	h.awaitApplied("a", 7)
	snap, _ := h.e.View().Snapshot("default")
	g := snap.GetGenerations()[0]
	if d := g.GetConvergeTime().AsTime().Sub(g.GetAcceptTime().AsTime()); d != 42*time.Millisecond {
		t.Fatalf("converged in %v after the restart, want 42ms (the restored apply)", d)
	}
	if c := <-rec.got; c.Generation != 7 || !c.Time.Equal(t0.Add(42*time.Millisecond)) {
		t.Fatalf("recorded %+v", c)
	}
	if got := rec.observations(); len(got) != 0 {
		t.Fatalf("the restart observed the convergence again: %v", got)
	}
}
