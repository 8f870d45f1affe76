package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
	ihar "github.com/confighub/confighub/test/harness" // the engine tests have their own harness type
)

const (
	pending  = confighubv1.SinkState_SINK_STATE_PENDING
	applying = confighubv1.SinkState_SINK_STATE_APPLYING
	applied  = confighubv1.SinkState_SINK_STATE_APPLIED
	failed   = confighubv1.SinkState_SINK_STATE_FAILED
	backoffS = confighubv1.SinkState_SINK_STATE_BACKOFF
	waiting  = confighubv1.SinkState_SINK_STATE_WAITING
	skipped  = confighubv1.SinkState_SINK_STATE_SKIPPED
)

func TestPublishNeverBlocks(t *testing.T) {
	h := newHarness(t)
	s := h.put("slow", kindTest, nil)
	s.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	started(t, s)
	// The sink is stuck in Apply; 500 more pushes must return at once.
	last := h.pushN(500)
	if got := h.e.Current("default"); got != last {
		t.Fatalf("current = %d, want %d", got.Generation, last.Generation)
	}
	snap, _ := h.e.View().Snapshot("default")
	if snap.GetGeneration() != last.Generation {
		t.Fatalf("status generation = %d, want %d", snap.GetGeneration(), last.Generation)
	}
	s.Set(enginetest.Behavior{})
	h.release(s)
	h.awaitApplied("slow", last.Generation)
	if got := s.Applied(); !equalGens(got, []uint64{1, last.Generation}) {
		t.Fatalf("applied %v, want [1 %d]", got, last.Generation)
	}
}

func TestHungSinkDoesNotDelayOthers(t *testing.T) {
	h := newHarness(t)
	hung := h.put("hung", kindTest, nil)
	hung.Set(enginetest.Behavior{Hang: true})
	ok := h.put("ok", kindTest, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := h.e.View().Watch(ctx, "default", 0)
	<-watch // snapshot
	for i := 1; i <= 20; i++ {
		cfg := h.pushN(1)
		// The watcher sees the new generation without waiting for the hung sink.
		for ev := range watch {
			if g := ev.GetGeneration(); g != nil && g.GetGeneration() == cfg.Generation {
				break
			}
		}
		h.awaitApplied("ok", cfg.Generation)
	}
	want := make([]uint64, 20)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if got := ok.Applied(); !equalGens(got, want) {
		t.Fatalf("healthy sink applied %v, want every generation %v", got, want)
	}
	// Meanwhile the hung sink is still in its first apply.
	hs := h.awaitSink("hung", "applying", func(s *confighubv1.SinkStatus) bool { return s.GetState() == applying })
	if hs.GetAppliedGeneration() != 0 || hs.GetAttempts() != 1 || hung.Calls() != 1 {
		t.Fatalf("hung sink status %v, calls %d; want one apply in flight", hs, hung.Calls())
	}
}

func TestNoConcurrentAppliesPerSink(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Block: true})
	for i := 0; i < 5; i++ {
		h.pushN(3)
		started(t, s)
		h.release(s)
	}
	s.Set(enginetest.Behavior{})
	s.ReleaseAll() // the apply after the last release, if one started
	h.awaitApplied("a", 15)
	if s.MaxInFlight() != 1 || s.OutOfOrder() {
		t.Fatalf("max in flight %d, out of order %v; applied %v", s.MaxInFlight(), s.OutOfOrder(), s.Applied())
	}
}

func TestCollapseWhileProcessing(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	started(t, s)
	h.pushN(4) // generations 2..5 while 1 is in flight
	s.Set(enginetest.Behavior{})
	h.release(s)
	st := h.awaitApplied("a", 5)
	if got := s.Applied(); !equalGens(got, []uint64{1, 5}) {
		t.Fatalf("applied %v, want [1 5]", got)
	}
	if st.GetCoalesced() != 3 || st.GetAppliesTotal() != 2 {
		t.Fatalf("coalesced %d applies %d, want 3 and 2", st.GetCoalesced(), st.GetAppliesTotal())
	}
}

func TestBurstCoalesces(t *testing.T) {
	h := newHarness(t)
	s := h.put("slow", kindTest, nil)
	s.Set(enginetest.Behavior{Delay: 100 * time.Millisecond})
	h.pushN(1)
	started(t, s)
	for i := 2; i <= 200; i++ {
		h.pushN(1)
		h.clock.Advance(time.Millisecond)
	}
	// Finish whatever is in flight until generation 200 started, then it.
	for {
		c := started(t, s)
		h.clock.Advance(100 * time.Millisecond)
		if c.Generation == 200 {
			break
		}
	}
	st := h.awaitApplied("slow", 200)
	got := s.Applied()
	if len(got) > 5 || got[len(got)-1] != 200 || s.OutOfOrder() {
		t.Fatalf("applied %v: want a handful of applies ending at 200", got)
	}
	if st.GetAppliesTotal() != uint64(len(got)) || st.GetCoalesced() != 200-uint64(len(got)) {
		t.Fatalf("status applies_total %d coalesced %d; want %d and %d", st.GetAppliesTotal(), st.GetCoalesced(), len(got), 200-len(got))
	}
	t.Logf("200 pushes: %d applies %v, coalesced %d", len(got), got, st.GetCoalesced())
}

func TestInFlightFinishesThenNewest(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	started(t, s)
	h.pushN(1)
	h.release(s) // generation 1 completes: not cancelled by generation 2
	if c := started(t, s); c.Generation != 2 {
		t.Fatalf("next apply is generation %d, want 2", c.Generation)
	}
	h.release(s)
	h.awaitApplied("a", 2)
	if got := s.Applied(); !equalGens(got, []uint64{1, 2}) {
		t.Fatalf("applied %v, want [1 2]", got)
	}
}

func TestCancelInFlight(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, &confighubv1.SinkOptions{CancelInFlight: true})
	s.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	started(t, s)
	h.pushN(1) // cancels generation 1
	if c := started(t, s); c.Generation != 2 {
		t.Fatalf("next apply is generation %d, want 2", c.Generation)
	}
	h.release(s)
	st := h.awaitApplied("a", 2)
	if got := s.Applied(); !equalGens(got, []uint64{2}) {
		t.Fatalf("applied %v, want [2]", got)
	}
	if st.GetNextRetryTime() != nil || st.GetLastError() != "" {
		t.Fatalf("a cancelled apply must not back off: %v", st)
	}
}

func TestHashSkip(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	h.push("", "same")
	h.awaitApplied("a", 1)
	h.push("", "same") // generation 2, same bytes
	st := h.awaitApplied("a", 2)
	if st.GetState() != skipped || !strings.Contains(st.GetReason(), "already applied") {
		t.Fatalf("status %v, want SKIPPED with a reason", st)
	}
	if s.Calls() != 1 {
		t.Fatalf("Apply called %d times, want 1", s.Calls())
	}
}

func TestRestoreSeedsHashSkip(t *testing.T) {
	h := newHarness(t)
	cfg := enginetest.Config("default", 7, "restored", t0)
	h.e.Restore([]store.Applied{{Sink: "a", Stream: "default", Generation: 7, Hash: cfg.Hash, Time: t0}})
	h.e.Publish(cfg)
	s := h.put("a", kindTest, nil)
	st := h.awaitApplied("a", 7)
	if s.Calls() != 0 {
		t.Fatalf("Apply called %d times after restore of the same hash", s.Calls())
	}
	if got, ok := h.e.LastApplied("a"); !ok || got != cfg {
		t.Fatalf("LastApplied = %v %v", got, ok)
	}
	snap, _ := h.e.View().Snapshot("default")
	if g := snap.GetGenerations()[0]; g.GetSinksApplied() != 1 || g.GetConvergeTime() == nil {
		t.Fatalf("generation status %v, want converged", g)
	}
	_ = st
}

func TestResyncForcesReapply(t *testing.T) {
	h := newHarness(t)
	h.put("gw", kindRunner, nil)
	r := h.fleet.Runner("gw")
	h.pushN(1)
	h.awaitApplied("gw", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := r.Notifier(ctx)
	must(t, err)
	n.Resync("gateway restarted empty")
	h.awaitSink("gw", "second apply", func(s *confighubv1.SinkStatus) bool { return s.GetAppliesTotal() == 2 && s.GetState() == applied })
	if got := r.Applied(); !equalGens(got, []uint64{1, 1}) {
		t.Fatalf("applied %v, want [1 1]", got)
	}
}

func TestAttemptTimeout(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, &confighubv1.SinkOptions{Timeout: dur(5 * time.Second)})
	s.Set(enginetest.Behavior{Hang: true})
	h.pushN(1)
	started(t, s) // the attempt's timer is set before Apply is called
	h.clock.Advance(5 * time.Second)
	st := h.awaitState("a", backoffS, 1)
	if st.GetLastErrorCode() != "timeout" || !strings.Contains(st.GetLastError(), "timed out after 5s") {
		t.Fatalf("status %v, want a timeout error", st)
	}
}

func TestBackoffGrowsAndCaps(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{
		Initial: dur(time.Second), Max: dur(4 * time.Second), Multiplier: 2,
	}})
	s.Set(enginetest.Behavior{Err: errors.New("connection refused")})
	h.pushN(1)
	for i, want := range []time.Duration{1, 2, 4, 4, 4} {
		want *= time.Second
		st := h.awaitSink("a", fmt.Sprintf("attempt %d in backoff", i+1), func(s *confighubv1.SinkStatus) bool {
			return s.GetState() == backoffS && s.GetAttempts() == uint32(i+1)
		})
		if got := st.GetNextRetryTime().AsTime().Sub(h.clock.Now()); got != want {
			t.Fatalf("attempt %d: next retry in %s, want %s", i+1, got, want)
		}
		if st.GetLastError() != "connection refused" || st.GetLastErrorCode() != string(sink.CodeUnavailable) {
			t.Fatalf("last error %q code %q", st.GetLastError(), st.GetLastErrorCode())
		}
		if i == 4 {
			s.Set(enginetest.Behavior{}) // the next attempt succeeds
		}
		h.blockUntil(1)
		h.clock.Advance(want)
	}
	h.awaitApplied("a", 1)
}

func TestNewGenerationInterruptsBackoff(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Err: errors.New("unavailable")})
	h.pushN(1)
	st := h.awaitState("a", backoffS, 1)
	if st.GetNextRetryTime() == nil {
		t.Fatal("no next retry time in backoff")
	}
	s.Set(enginetest.Behavior{})
	h.pushN(1) // no clock advance: generation 2 is tried at once
	h.awaitApplied("a", 2)
	if got := s.Applied(); !equalGens(got, []uint64{2}) {
		t.Fatalf("applied %v, want [2]", got)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Err: sink.RetryAfter(10*time.Second, errors.New("Currently loading previous configuration"))})
	h.pushN(1)
	st := h.awaitState("a", backoffS, 1)
	if got := st.GetNextRetryTime().AsTime().Sub(h.clock.Now()); got != 10*time.Second {
		t.Fatalf("next retry in %s, want the 10s Retry-After", got)
	}
	s.Set(enginetest.Behavior{})
	h.blockUntil(1)
	h.clock.Advance(9 * time.Second)
	h.pushN(1) // even a new generation waits for the destination's Retry-After
	st = h.awaitState("a", backoffS, 2)
	if !strings.Contains(st.GetReason(), "Retry-After") || s.Calls() != 1 {
		t.Fatalf("status %v calls %d; want BACKOFF for Retry-After and no new call", st, s.Calls())
	}
	h.blockUntil(1)
	h.clock.Advance(time.Second)
	h.awaitApplied("a", 2)
}

func TestPermanentNotRetried(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	ee := []*confighubv1.EntityError{{EntityType: "service", EntityName: "svc", EntityTags: []string{"k8s-name:svc"},
		Errors: []*confighubv1.FieldError{{Type: "field", Field: "host", Message: "required field missing"}}}}
	s.Set(enginetest.Behavior{Err: &sink.Error{Code: "rejected", Message: "invalid declarative configuration", Permanent: true, EntityErrors: ee, Body: []byte(`{"code":14}`)}})
	h.pushN(1)
	st := h.awaitState("a", failed, 1)
	if st.GetRejectedGeneration() != 1 || st.GetLastErrorCode() != "rejected" || len(st.GetEntityErrors()) != 1 || st.GetNextRetryTime() != nil {
		t.Fatalf("status %v", st)
	}
	h.clock.Advance(time.Hour)
	h.e.Publish(h.e.Current("default")) // same generation: ignored
	if s.Calls() != 1 {
		t.Fatalf("rejected generation retried: %d calls", s.Calls())
	}
	cfg, serr, ok := h.e.LastFailed("a")
	if !ok || cfg.Generation != 1 || string(serr.Body) != `{"code":14}` {
		t.Fatalf("LastFailed = %v %v %v", cfg, serr, ok)
	}
	s.Set(enginetest.Behavior{})
	h.pushN(1)
	st = h.awaitApplied("a", 2)
	if st.GetLastError() != "" || len(st.GetEntityErrors()) != 0 || st.GetRejectedGeneration() != 1 {
		t.Fatalf("status after success %v", st)
	}
	if _, _, ok := h.e.LastFailed("a"); ok {
		t.Fatal("the failed config is still held after a newer generation applied")
	}
}

func TestPanicRecovered(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Panic: "boom"})
	h.pushN(1)
	st := h.awaitSink("a", "panic reported", func(s *confighubv1.SinkStatus) bool { return s.GetLastErrorCode() == string(sink.CodeInternal) })
	if st.GetState() != failed || !strings.Contains(st.GetLastError(), "boom") || st.GetNextRetryTime() == nil {
		t.Fatalf("status %v, want FAILED with code panic and a retry time", st)
	}
	s.Set(enginetest.Behavior{})
	h.blockUntil(1)
	h.clock.Advance(time.Second)
	h.awaitApplied("a", 1)
}

func TestMinInterval(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, &confighubv1.SinkOptions{MinInterval: dur(10 * time.Second)})
	h.pushN(1)
	h.awaitApplied("a", 1)
	h.pushN(1)
	st := h.awaitState("a", waiting, 2)
	if !strings.Contains(st.GetReason(), "min_interval") {
		t.Fatalf("reason %q", st.GetReason())
	}
	h.blockUntil(1)
	h.clock.Advance(9 * time.Second)
	h.pushN(1)
	h.awaitState("a", waiting, 3)
	if s.Calls() != 1 {
		t.Fatalf("%d calls within min_interval", s.Calls())
	}
	h.blockUntil(1)
	h.clock.Advance(time.Second)
	h.awaitApplied("a", 3)
	if got := s.Applied(); !equalGens(got, []uint64{1, 3}) {
		t.Fatalf("applied %v", got)
	}
}

func TestDebounce(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, &confighubv1.SinkOptions{Debounce: dur(2 * time.Second)})
	h.pushN(1)
	h.awaitState("a", waiting, 1)
	h.blockUntil(1)
	h.clock.Advance(time.Second)
	h.pushN(1)
	st := h.awaitState("a", waiting, 2)
	if !strings.Contains(st.GetReason(), "debounce") {
		t.Fatalf("reason %q", st.GetReason())
	}
	h.blockUntil(1)
	h.clock.Advance(time.Second) // 1s after generation 2: still quiet time
	h.awaitState("a", waiting, 2)
	if s.Calls() != 0 {
		t.Fatalf("applied during the quiet time")
	}
	h.blockUntil(1)
	h.clock.Advance(time.Second)
	h.awaitApplied("a", 2)
	if got := s.Applied(); !equalGens(got, []uint64{2}) {
		t.Fatalf("applied %v, want [2]", got)
	}
}

func TestDebounceMaxDelay(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, &confighubv1.SinkOptions{Debounce: dur(2 * time.Second), MaxDelay: dur(5 * time.Second)})
	start := h.clock.Now()
	for i := 1; i <= 4; i++ {
		h.pushN(1)
		h.awaitState("a", waiting, uint64(i))
		h.blockUntil(1)
		if i < 4 {
			h.clock.Advance(1500 * time.Millisecond)
		}
	}
	// Generation 4 came at 4.5s: debounce alone would wait until 6.5s, the
	// max delay forces the apply at 5s.
	h.clock.Advance(500 * time.Millisecond)
	h.awaitApplied("a", 4)
	if got := h.clock.Since(start); got != 5*time.Second {
		t.Fatalf("applied after %s", got)
	}
	if got := s.Applied(); !equalGens(got, []uint64{4}) {
		t.Fatalf("applied %v, want [4]", got)
	}
}

func TestMaxConcurrentApplies(t *testing.T) {
	h := newHarness(t, engine.WithMaxConcurrentApplies(1))
	a := h.put("a", kindTest, nil)
	a.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	started(t, a)
	h.put("b", kindTest, nil)
	st := h.awaitState("b", pending, 1)
	if !strings.Contains(st.GetReason(), "apply slot") {
		t.Fatalf("reason %q", st.GetReason())
	}
	// Bookkeeping goes on while b waits for a slot.
	h.pushN(1)
	h.await("", "generation 2 in status", func(r *confighubv1.GetStatusResponse) bool { return r.GetGeneration() == 2 })
	a.Set(enginetest.Behavior{})
	h.release(a)
	h.awaitApplied("a", 2)
	h.awaitApplied("b", 2)
	if got := h.fleet.MaxInFlight(); got != 1 {
		t.Fatalf("%d applies in flight at once, limit 1", got)
	}
}

func TestGateAnyGateway(t *testing.T) {
	h := newHarness(t)
	// No gateway sink in the stream: no wait.
	h.putOn("k-alone", kindKonnect, "solo", nil)
	h.push("solo", "x")
	h.awaitApplied("k-alone", 1)

	gw := h.put("gw", kindGateway, nil)
	gw.Set(enginetest.Behavior{Block: true})
	k := h.put("konnect", kindKonnect, nil)
	h.pushN(1)
	st := h.awaitState("konnect", waiting, 1)
	if !strings.Contains(st.GetReason(), "gateway") || k.Calls() != 0 {
		t.Fatalf("konnect status %v calls %d", st, k.Calls())
	}
	specs := h.e.ListSinks("default")
	if specs[1].GetName() != "konnect" || specs[1].GetOptions().GetGate() != confighubv1.Gate_GATE_ANY_GATEWAY {
		t.Fatalf("konnect spec %v: want the kind's default gate", specs[1])
	}
	h.release(gw)
	h.awaitApplied("konnect", 1)
}

func TestGateWaves(t *testing.T) {
	h := newHarness(t)
	a := h.put("a", kindTest, nil)
	h.put("b", kindTest, nil)
	c := h.put("c", kindTest, &confighubv1.SinkOptions{Wave: 1})
	a.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	h.awaitApplied("b", 1)
	st := h.awaitState("c", waiting, 1)
	if !strings.Contains(st.GetReason(), "waves below 1") || c.Calls() != 0 {
		t.Fatalf("wave 1 status %v calls %d", st, c.Calls())
	}
	h.release(a)
	h.awaitApplied("c", 1)
}

func TestGateWaveMinApplied(t *testing.T) {
	h := newHarness(t)
	a := h.put("a", kindTest, nil)
	h.put("b", kindTest, nil)
	h.put("c", kindTest, &confighubv1.SinkOptions{Wave: 1, WaveMinApplied: 1})
	a.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	h.awaitApplied("c", 1) // b alone opens the gate
	st, _ := h.e.View().Snapshot("default")
	if sinkOf(st, "a").GetAppliedGeneration() != 0 {
		t.Fatal("a applied while blocked")
	}
	h.release(a)
	h.awaitApplied("a", 1)
}

func TestWaveRejectionStopsLaterWaves(t *testing.T) {
	h := newHarness(t)
	a := h.put("a", kindTest, nil)
	b := h.put("b", kindTest, &confighubv1.SinkOptions{Wave: 1})
	c := h.put("c", kindTest, &confighubv1.SinkOptions{Wave: 2})
	a.Set(enginetest.Behavior{Err: &sink.Error{Code: "rejected", Permanent: true, Message: "bad route"}})
	h.pushN(1)
	h.awaitState("a", failed, 1)
	for _, n := range []string{"b", "c"} {
		st := h.awaitState(n, skipped, 1)
		if !strings.Contains(st.GetReason(), `rejected by sink "a"`) {
			t.Fatalf("%s reason %q", n, st.GetReason())
		}
	}
	if b.Calls()+c.Calls() != 0 {
		t.Fatal("a rejected generation reached a later wave")
	}
	a.Set(enginetest.Behavior{})
	h.pushN(1) // a newer generation re-opens
	h.awaitApplied("c", 2)
	h.awaitApplied("b", 2)
}

func TestNewSinkGetsCurrentGeneration(t *testing.T) {
	h := newHarness(t)
	h.pushN(3)
	s := h.put("late", kindTest, &confighubv1.SinkOptions{Debounce: dur(time.Minute)})
	h.awaitApplied("late", 3)
	if got := s.Applied(); !equalGens(got, []uint64{3}) {
		t.Fatalf("applied %v, want [3]", got)
	}
}

func TestDeleteSinkStopsAndCloses(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	h.put("b", kindTest, nil)
	s.Set(enginetest.Behavior{Hang: true})
	h.pushN(1)
	started(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := h.e.View().Watch(ctx, "default", h.mustRevision())
	must(t, h.e.DeleteSink("a"))
	if !s.Closed() {
		t.Fatal("deleted sink not closed")
	}
	st, _ := h.e.View().Snapshot("default")
	if sinkOf(st, "a") != nil || len(h.e.ListSinks("")) != 1 {
		t.Fatalf("deleted sink still listed: %v", st)
	}
	for ev := range watch {
		if ev.GetSinkRemoved() == "a" {
			break
		}
	}
	if err := h.e.DeleteSink("a"); !errors.Is(err, engine.ErrSinkNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func (h *harness) mustRevision() uint64 {
	st, ok := h.e.View().Snapshot("default")
	if !ok {
		h.t.Fatal("no status")
	}
	return st.GetRevision()
}

func TestReplaceSink(t *testing.T) {
	h := newHarness(t)
	spec := &confighubv1.Sink{Name: "a", Kind: kindTest}
	_, created, err := h.e.PutSink(spec)
	must(t, err)
	if !created {
		t.Fatal("created = false for a new sink")
	}
	old := h.fleet.Sink("a")
	h.pushN(1)
	h.awaitApplied("a", 1)
	if _, created, err = h.e.PutSink(spec); err != nil || created || h.fleet.Builds() != 1 {
		t.Fatalf("identical put: created %v err %v builds %d", created, err, h.fleet.Builds())
	}
	spec.Options = &confighubv1.SinkOptions{Timeout: dur(time.Second)}
	norm, created, err := h.e.PutSink(spec)
	must(t, err)
	if created || norm.GetOptions().GetTimeout().AsDuration() != time.Second {
		t.Fatalf("replace: created %v norm %v", created, norm)
	}
	if !old.Closed() {
		t.Fatal("replaced sink not closed")
	}
	nu := h.fleet.Sink("a")
	h.awaitSink("a", "re-applied", func(s *confighubv1.SinkStatus) bool { return s.GetAppliesTotal() == 1 && s.GetState() == applied })
	if got := nu.Applied(); !equalGens(got, []uint64{1}) {
		t.Fatalf("replacement applied %v", got)
	}
	// Moving the sink to another stream moves its status.
	spec.Stream = "other"
	must(t, errOf(h.e.PutSink(spec)))
	h.await("other", "a in stream other", func(r *confighubv1.GetStatusResponse) bool { return sinkOf(r, "a") != nil })
	if st, _ := h.e.View().Snapshot("default"); sinkOf(st, "a") != nil {
		t.Fatalf("status of a still in stream default: %v", st)
	}
}

func errOf(_ *confighubv1.Sink, _ bool, err error) error { return err }

func TestStopClosesEverything(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	h.put("gw", kindRunner, nil)
	s.Set(enginetest.Behavior{Hang: true})
	h.pushN(1)
	started(t, s)
	watch := h.e.View().Watch(context.Background(), "default", 0)
	h.e.Stop()
	for range watch {
	}
	if !s.Closed() || !h.fleet.Sink("gw").Closed() {
		t.Fatal("sinks not closed by Stop")
	}
	if _, _, err := h.e.PutSink(&confighubv1.Sink{Name: "b", Kind: kindTest}); !errors.Is(err, engine.ErrStopped) {
		t.Fatalf("PutSink after Stop: %v", err)
	}
	h.e.Stop() // idempotent
}

func TestHealthReflectedInStatus(t *testing.T) {
	h := newHarness(t)
	h.put("gw", kindRunner, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := h.fleet.Runner("gw").Notifier(ctx)
	must(t, err)
	n.Health(errors.New("dial tcp 10.0.0.5:8001: connection refused"))
	h.awaitSink("gw", "unreachable", func(s *confighubv1.SinkStatus) bool {
		return s.GetLastError() == "unreachable: dial tcp 10.0.0.5:8001: connection refused" && s.GetLastErrorCode() == "unreachable"
	})
	n.Health(nil)
	h.awaitSink("gw", "reachable", func(s *confighubv1.SinkStatus) bool { return s.GetLastError() == "" })
}

// TestRecoveryClearsLastError: after a sink recovers (its Runner saw the
// destination unreachable, an apply failed, then an apply succeeded),
// status is APPLIED with no last_error; the failure it recovered from is
// previous_error. A Runner that reports the destination down again shows
// again.
func TestRecoveryClearsLastError(t *testing.T) {
	h := newHarness(t)
	gw := h.put("gw", kindRunner, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := h.fleet.Runner("gw").Notifier(ctx)
	must(t, err)
	down := errors.New("dial tcp 10.0.0.5:8001: connection refused")
	n.Health(down)
	gw.Set(enginetest.Behavior{Err: down})
	h.pushN(1)
	h.awaitSink("gw", "backoff while unreachable", func(s *confighubv1.SinkStatus) bool {
		return s.GetState() == backoffS && s.GetLastErrorCode() == "unreachable"
	})
	// The gateway is back before the Runner's next check: the retry
	// succeeds.
	gw.Set(enginetest.Behavior{})
	h.clock.Advance(time.Hour)
	st := h.awaitApplied("gw", 1)
	if st.GetLastError() != "" || st.GetLastErrorCode() != "" {
		t.Fatalf("APPLIED with last_error %q (%q)", st.GetLastError(), st.GetLastErrorCode())
	}
	if st.GetPreviousError() != "unreachable: "+down.Error() || st.GetPreviousErrorCode() != "unreachable" {
		t.Fatalf("previous_error %q (%q)", st.GetPreviousError(), st.GetPreviousErrorCode())
	}
	// The Runner reports the same failure again: it shows again.
	n.Health(down)
	h.awaitSink("gw", "unreachable again", func(s *confighubv1.SinkStatus) bool { return s.GetLastErrorCode() == "unreachable" })
	n.Health(nil)

	// Without a Runner: an apply error, then a success.
	a := h.put("a", kindTest, nil)
	a.Set(enginetest.Behavior{Err: errors.New("connection reset")})
	h.pushN(1)
	h.awaitSink("a", "backoff", func(s *confighubv1.SinkStatus) bool { return s.GetState() == backoffS && s.GetDesiredGeneration() == 2 })
	a.Set(enginetest.Behavior{})
	h.clock.Advance(time.Hour)
	st = h.awaitApplied("a", 2)
	if st.GetLastError() != "" || st.GetPreviousError() != "connection reset" || st.GetPreviousErrorCode() != string(sink.CodeUnavailable) {
		t.Fatalf("after recovery: last_error %q previous %q (%q)", st.GetLastError(), st.GetPreviousError(), st.GetPreviousErrorCode())
	}
}

func TestGenerationConverges(t *testing.T) {
	h := newHarness(t)
	h.put("a", kindTest, nil)
	b := h.put("b", kindTest, nil)
	b.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	h.awaitApplied("a", 1)
	snap := h.await("", "1 of 2 applied", func(r *confighubv1.GetStatusResponse) bool {
		g := r.GetGenerations()
		return len(g) == 1 && g[0].GetSinksApplied() == 1 && g[0].GetSinksTotal() == 2
	})
	if snap.GetGenerations()[0].GetConvergeTime() != nil {
		t.Fatal("converged before every sink applied")
	}
	h.clock.Advance(3 * time.Second)
	h.release(b)
	snap = h.await("", "converged", func(r *confighubv1.GetStatusResponse) bool { return r.GetGenerations()[0].GetConvergeTime() != nil })
	g := snap.GetGenerations()[0]
	if g.GetSinksApplied() != 2 || !g.GetConvergeTime().AsTime().Equal(h.clock.Now()) || g.GetAcceptTime().AsTime().Add(3*time.Second) != h.clock.Now() {
		t.Fatalf("generation status %v", g)
	}
}

func TestSlowWatcherDoesNotBlockEngine(t *testing.T) {
	h := newHarness(t, engine.WithWatchBuffer(4))
	s := h.put("a", kindTest, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stalled := h.e.View().Watch(ctx, "default", 0) // never read until the end
	for i := 1; i <= 50; i++ {
		h.pushN(1)
		h.awaitApplied("a", uint64(i))
	}
	if len(s.Applied()) != 50 {
		t.Fatalf("applied %v", s.Applied())
	}
	// The stalled watcher was cut over (a fresh snapshot instead of the
	// changes it could not take) and, reading now, ends at the last state.
	var sawCutOver bool
	var appliedSeen uint64
	for ev := range stalled {
		if ev.GetSnapshotReason() == "slow-watcher" {
			sawCutOver = true
		}
		if snap := ev.GetSnapshot(); snap != nil {
			appliedSeen = sinkOf(snap, "a").GetAppliedGeneration()
		}
		if st := ev.GetSink(); st != nil {
			appliedSeen = st.GetAppliedGeneration()
		}
		if sawCutOver && appliedSeen == 50 {
			break
		}
	}
	if !sawCutOver {
		t.Fatal("no slow-watcher snapshot")
	}
}

type flakyRecorder struct {
	fails   int
	records []store.Applied
	calls   chan store.Applied
}

func (r *flakyRecorder) RecordConverged(context.Context, store.Converged) error { return nil }

func (r *flakyRecorder) RecordApplied(_ context.Context, a store.Applied) error {
	// The channel send hands the state over to the test: update it first.
	if r.fails > 0 {
		r.fails--
		r.calls <- a
		return errors.New("disk full")
	}
	r.records = append(r.records, a)
	r.calls <- a
	return nil
}

func TestRecorder(t *testing.T) {
	rec := &flakyRecorder{fails: 1, calls: make(chan store.Applied, 10)}
	h := newHarness(t, engine.WithRecorder(rec))
	h.put("a", kindTest, nil)
	h.pushN(1)
	if a := <-rec.calls; a.Generation != 1 || a.Sink != "a" || a.Stream != "default" {
		t.Fatalf("recorded %+v", a)
	}
	h.pushN(1)
	if a := <-rec.calls; a.Generation != 2 {
		t.Fatalf("recorded %+v", a)
	}
	if len(rec.records) != 1 || rec.records[0].Generation != 2 || rec.records[0].Hash != h.e.Current("default").Hash {
		t.Fatalf("records %+v", rec.records)
	}
}

func TestValidateSink(t *testing.T) {
	h := newHarness(t)
	norm, err := h.e.ValidateSink(&confighubv1.Sink{Name: "k", Kind: kindKonnect})
	must(t, err)
	if norm.GetStream() != "default" || norm.GetOptions().GetGate() != confighubv1.Gate_GATE_ANY_GATEWAY || norm.GetOptions().GetTimeout().AsDuration() != 120*time.Second {
		t.Fatalf("normalised %v", norm)
	}
	cases := []struct {
		spec *confighubv1.Sink
		is   error
		msg  string
	}{
		{&confighubv1.Sink{Name: "x", Kind: "nope"}, sink.ErrUnknownKind, `"nope"`},
		{&confighubv1.Sink{Name: "x"}, sink.ErrInvalidSpec, "neither a kind nor a spec"},
		{&confighubv1.Sink{Kind: kindTest}, sink.ErrInvalidSpec, "name is required"},
		{&confighubv1.Sink{Name: "-x", Kind: kindTest}, sink.ErrInvalidSpec, "name"},
		{&confighubv1.Sink{Name: "x", Kind: kindTest, Stream: "Bad"}, sink.ErrInvalidSpec, "stream"},
		{&confighubv1.Sink{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{Timeout: dur(0)}}, sink.ErrInvalidSpec, "options.timeout"},
		{&confighubv1.Sink{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{MaxDelay: dur(time.Second)}}, sink.ErrInvalidSpec, "max_delay needs"},
		{&confighubv1.Sink{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{Wave: 101}}, sink.ErrInvalidSpec, "wave"},
		{&confighubv1.Sink{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Initial: dur(time.Minute), Max: dur(time.Second)}}}, sink.ErrInvalidSpec, "backoff.max"},
		{&confighubv1.Sink{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Multiplier: 0.5}}}, sink.ErrInvalidSpec, "multiplier"},
	}
	for _, c := range cases {
		_, err := h.e.ValidateSink(c.spec)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ValidateSink(%v) = %v; want %v mentioning %q", c.spec, err, c.is, c.msg)
		}
	}
	// A factory error is an invalid spec too, and changes nothing.
	if _, _, err := h.e.PutSink(&confighubv1.Sink{Name: "x", Kind: kindTest, Spec: &confighubv1.Sink_Custom{Custom: mustStruct(t, map[string]any{"invalid": true})}}); !errors.Is(err, sink.ErrInvalidSpec) {
		t.Fatalf("factory error: %v", err)
	}
	// Each layer that knows the name says it once, not once per layer.
	for _, spec := range []*confighubv1.Sink{
		{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{Wave: 101}},
		{Name: "x", Kind: kindTest, Options: &confighubv1.SinkOptions{MaxDelay: dur(time.Second)}},
	} {
		if _, _, err := h.e.PutSink(spec); err == nil || strings.Count(err.Error(), `"x"`) != 1 {
			t.Errorf("PutSink(%v) = %v: want the sink named once", spec, err)
		}
	}
	if len(h.e.ListSinks("")) != 0 {
		t.Fatal("a failed put left a sink")
	}
}

func TestResyncAndRecoveryCutBackoff(t *testing.T) {
	for name, recover := range map[string]func(n sink.Notifier){
		"resync":          func(n sink.Notifier) { n.Resync("plugin reconnected") },
		"reachable again": func(n sink.Notifier) { n.Health(errors.New("connection refused")); n.Health(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.put("gw", kindRunner, &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Initial: dur(time.Minute), Max: dur(time.Hour)}})
			r := h.fleet.Runner("gw")
			r.Set(enginetest.Behavior{Err: errors.New("connection refused")})
			h.pushN(1)
			h.awaitState("gw", backoffS, 1)
			r.Set(enginetest.Behavior{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n, err := r.Notifier(ctx)
			must(t, err)
			recover(n) // no clock advance: the minute of backoff is not waited out
			h.awaitApplied("gw", 1)
		})
	}
}

// A watcher that resumes against a restarted hub with a revision of the
// previous run gets a fresh snapshot, not the new run's changes after that
// number (which would leave it with a stale view of the sinks).
func TestWatchResumeAfterRestart(t *testing.T) {
	h := newHarness(t)
	h.put("a", kindTest, nil)
	h.pushN(1)
	h.awaitApplied("a", 1)
	seen := h.mustRevision()
	h.e.Stop()

	h.clock.Advance(time.Second) // the restart takes time
	h2 := newHarness(t)
	h2.clock = h.clock
	h2.e = engine.New(h2.reg, engine.WithClock(h.clock))
	t.Cleanup(h2.e.Stop)
	h2.put("a", kindTest, nil)
	h2.put("b", kindTest, nil)
	h2.pushN(3)
	h2.awaitApplied("a", 3)
	h2.awaitApplied("b", 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := <-h2.e.View().Watch(ctx, "default", seen)
	if ev.GetSnapshotReason() != "resume-gap" || len(ev.GetSnapshot().GetSinks()) != 2 {
		t.Fatalf("resume from revision %d of the previous run: got %v, want a resume-gap snapshot", seen, ev)
	}
}

// A sink that ignores its context holds up only changes to its own name:
// deleting it waits for its apply, but other sinks can still be put and
// deleted meanwhile (the controller keeps registering gateways).
func TestStuckSinkDoesNotBlockOtherAdminCalls(t *testing.T) {
	h := newHarness(t)
	stuck := h.put("stuck", kindTest, nil)
	stuck.Set(enginetest.Behavior{Block: true, IgnoreContext: true})
	h.put("other", kindTest, nil)
	h.pushN(1)
	started(t, stuck)
	deleted := make(chan error, 1)
	go func() { deleted <- h.e.DeleteSink("stuck") }()
	h.await("", "stuck removed", func(r *confighubv1.GetStatusResponse) bool { return sinkOf(r, "stuck") == nil })

	admin := make(chan error, 1)
	go func() {
		if _, _, err := h.e.PutSink(&confighubv1.Sink{Name: "new", Kind: kindTest}); err != nil {
			admin <- err
			return
		}
		admin <- h.e.DeleteSink("other")
	}()
	select {
	case err := <-admin:
		must(t, err)
	case <-time.After(10 * time.Second):
		stuck.ReleaseAll()
		t.Fatal("PutSink/DeleteSink of other sinks waited for a stuck sink's apply")
	}
	h.awaitApplied("new", 1)
	select {
	case err := <-deleted:
		t.Fatalf("DeleteSink of the stuck sink returned (%v) before its apply did", err)
	default:
	}
	stuck.ReleaseAll()
	must(t, <-deleted)
	if !stuck.Closed() {
		t.Fatal("stuck sink not closed after its apply returned")
	}
}

func TestAdminAfterStop(t *testing.T) {
	h := newHarness(t)
	h.put("a", kindTest, nil)
	h.e.Stop()
	if err := h.e.DeleteSink("a"); !errors.Is(err, engine.ErrStopped) {
		t.Fatalf("DeleteSink after Stop: %v, want ErrStopped (the sink is closed already)", err)
	}
	if _, _, err := h.e.PutSink(&confighubv1.Sink{Name: "b", Kind: kindTest}); !errors.Is(err, engine.ErrStopped) {
		t.Fatalf("PutSink after Stop: %v", err)
	}
}

// describeGated is a sink whose Describe waits for a gate.
type describeGated struct {
	*enginetest.Sink
	entered chan struct{}
	gate    chan struct{}
}

func (s describeGated) Describe() sink.Capabilities {
	close(s.entered)
	<-s.gate
	return sink.Capabilities{}
}

// The engine calls no sink method under its lock: a slow Describe while a
// sink is put does not hold up Publish (the push path).
func TestSlowDescribeDoesNotBlockPublish(t *testing.T) {
	h := newHarness(t)
	d := describeGated{Sink: enginetest.NewSink("d", h.clock, sink.Capabilities{}), entered: make(chan struct{}), gate: make(chan struct{})}
	must(t, h.reg.Register("describe-gated", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) { return d, nil }))
	put := make(chan error, 1)
	go func() {
		_, _, err := h.e.PutSink(&confighubv1.Sink{Name: "d", Kind: "describe-gated"})
		put <- err
	}()
	<-d.entered
	published := make(chan struct{})
	go func() {
		h.pushN(1)
		close(published)
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		close(d.gate)
		<-published
		t.Fatal("Publish waited for a sink's Describe")
	}
	close(d.gate)
	must(t, <-put)
	h.awaitApplied("d", 1)
}

// A hung non-gateway sink (a Konnect that never answers) takes a slot of
// the non-gateway pool only: gateways keep the whole hub-wide limit, and
// other non-gateway sinks wait for their own pool.
func TestNonGatewaySinksHaveTheirOwnApplySlots(t *testing.T) {
	h := newHarness(t, engine.WithMaxConcurrentApplies(1))
	k := h.put("konnect-hung", kindTest, nil)
	k.Set(enginetest.Behavior{Hang: true})
	h.pushN(1)
	started(t, k)
	gws := []string{"gw-a", "gw-b", "gw-c"}
	for _, name := range gws {
		h.put(name, kindGateway, nil)
	}
	for _, name := range gws {
		h.awaitApplied(name, 1)
	}
	if got := h.fleet.MaxInFlight(); got != 2 {
		t.Fatalf("%d applies in flight at once; want 2 (one per pool, limit 1 each)", got)
	}
	// The non-gateway pool is still limited: another non-gateway sink
	// waits behind the hung one.
	h.put("file", kindTest, nil)
	st := h.awaitState("file", pending, 1)
	if !strings.Contains(st.GetReason(), "non-gateway") {
		t.Fatalf("reason %q: want the non-gateway pool named", st.GetReason())
	}
}

// A sink whose applies take no slot (Capabilities.NoApplySlot: a Kong
// data plane in hybrid mode) applies while both pools are full.
func TestNoApplySlotSinksTakeNoSlot(t *testing.T) {
	h := newHarness(t, engine.WithMaxConcurrentApplies(1))
	must(t, h.fleet.Register(h.reg, "dp", sink.Capabilities{Gateway: true, NoApplySlot: true}, false, sink.AsGateway()))
	gw := h.put("gw-hung", kindGateway, nil)
	gw.Set(enginetest.Behavior{Hang: true})
	other := h.put("other-hung", kindTest, nil)
	other.Set(enginetest.Behavior{Hang: true})
	h.pushN(1)
	started(t, gw)
	started(t, other)
	for _, name := range []string{"dp-a", "dp-b"} {
		h.put(name, "dp", nil)
	}
	h.awaitApplied("dp-a", 1)
	h.awaitApplied("dp-b", 1)
	h.put("gw-queued", kindGateway, nil)
	h.awaitState("gw-queued", pending, 1)
}

// A sink queued for an apply slot reports PENDING once, is not woken by
// newer generations while it waits, takes the newest when a slot is handed
// to it, and queued sinks get slots in arrival order.
func TestApplySlotQueue(t *testing.T) {
	h := newHarness(t, engine.WithMaxConcurrentApplies(1))
	a := h.put("a", kindTest, nil)
	a.Set(enginetest.Behavior{Block: true})
	h.pushN(1)
	started(t, a)
	// The changes from here on, read below as the history replays them
	// to a resume (live watchers get an apply's APPLYING and APPLIED
	// coalesced when they fall in one round).
	before, _ := h.e.View().Snapshot("default")
	b := h.put("b", kindTest, nil)
	h.awaitState("b", pending, 1)
	c := h.put("c", kindTest, nil)
	h.awaitState("c", pending, 1)
	h.pushN(2) // generations 2 and 3 while b and c wait
	h.await("", "generation 3 in status", func(r *confighubv1.GetStatusResponse) bool { return r.GetGeneration() == 3 })
	a.Set(enginetest.Behavior{})
	h.release(a)
	h.awaitApplied("a", 3)
	h.awaitApplied("b", 3)
	h.awaitApplied("c", 3)
	if got := b.Applied(); !equalGens(got, []uint64{3}) {
		t.Fatalf("b applied %v, want only the newest generation [3]", got)
	}
	if got := c.Applied(); !equalGens(got, []uint64{3}) {
		t.Fatalf("c applied %v, want only the newest generation [3]", got)
	}
	// Read the changes up to now: b's PENDING for a slot was reported
	// once (not again for generations 2 and 3), and b
	// started before c (FIFO).
	final, _ := h.e.View().Snapshot("default")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pendingB, order := 0, []string{}
	for ev := range h.e.View().Watch(ctx, "default", before.GetRevision()) {
		if s := ev.GetSink(); s != nil {
			if s.GetSink() == "b" && s.GetState() == pending && strings.Contains(s.GetReason(), "apply slot") {
				pendingB++
			}
			if s.GetState() == confighubv1.SinkState_SINK_STATE_APPLYING && s.GetSink() != "a" {
				order = append(order, s.GetSink())
			}
		}
		if ev.GetRevision() >= final.GetRevision() {
			break
		}
	}
	if pendingB != 1 {
		t.Fatalf("b reported PENDING %d times while queued, want once", pendingB)
	}
	if len(order) != 2 || order[0] != "b" || order[1] != "c" {
		t.Fatalf("queued sinks started in order %v, want [b c]", order)
	}
}

// TestErrorTextRedacted: a sink's error text goes through the message
// redactor before status (last_error, entity errors) and GetConfig's
// failed-apply error; the raw body is kept.
func TestErrorTextRedacted(t *testing.T) {
	h := newHarness(t, engine.WithMessageRedactor(func(s string) string { return strings.ReplaceAll(s, "hunter2", "<redacted>") }))
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Err: &sink.Error{Code: "rejected", Permanent: true, Message: "key set to 'hunter2' already declared",
		Body: []byte("raw hunter2"), EntityErrors: []*confighubv1.EntityError{{EntityType: "keyauth_credential", Errors: []*confighubv1.FieldError{{Message: "key 'hunter2'"}}}}}})
	h.pushN(1)
	st := h.awaitState("a", confighubv1.SinkState_SINK_STATE_FAILED, 1)
	if strings.Contains(st.GetLastError(), "hunter2") || st.GetLastError() != "rejected: key set to '<redacted>' already declared" {
		t.Fatalf("last_error %q", st.GetLastError())
	}
	if m := st.GetEntityErrors()[0].GetErrors()[0].GetMessage(); m != "key '<redacted>'" {
		t.Fatalf("entity error message %q", m)
	}
	_, se, ok := h.e.LastFailed("a")
	if !ok || strings.Contains(se.Error(), "hunter2") || string(se.Body) != "raw hunter2" || !se.Permanent {
		t.Fatalf("LastFailed: %+v", se)
	}
}

// TestDeleteSinkIsLogged: DeleteSink logs "sink deleted" with the sink's
// kind and stream, and closes the sink.
func TestDeleteSinkIsLogged(t *testing.T) {
	rec := ihar.NewLogRecorder(t, slog.LevelDebug)
	h := newHarness(t, engine.WithLogger(rec.Logger()))
	b := h.put("b", kindTest, nil)
	must(t, h.e.DeleteSink("b"))
	if !b.Closed() {
		t.Fatal("deleted sink not closed")
	}
	if lines := strings.Join(rec.Lines(), "\n"); !strings.Contains(lines, "INFO sink deleted sink=b kind=test stream=default") {
		t.Errorf("DeleteSink not logged as a deletion:\n%s", lines)
	}
}

// ownerMap is an Ownership that leads every stream.
type ownerMap struct {
	p  *placement
	id string
}

func (o ownerMap) OwnsSink(name string) bool { return o.OwnerOf(name) == o.id }
func (o ownerMap) OwnsStream(string) bool    { return true }
func (o ownerMap) OwnerOf(name string) string {
	o.p.mu.Lock()
	defer o.p.mu.Unlock()
	return o.p.owner[name]
}

var _ engine.Ownership = ownerMap{}

// TestHandOverIsNotADelete: a sink this engine stops running because
// another replica owns it now (Reown) is logged as handed over to that
// replica, never as deleted.
func TestHandOverIsNotADelete(t *testing.T) {
	rec := ihar.NewLogRecorder(t, slog.LevelDebug)
	p := &placement{owner: map[string]string{"a": "A"}}
	h := newHarness(t, engine.WithOwnership(ownerMap{p, "A"}), engine.WithLogger(rec.Logger()))
	h.put("a", kindTest, nil)
	h.pushN(1)
	h.awaitApplied("a", 1)
	p.set("a", "B")
	if errs := h.e.Reown(); len(errs) != 0 {
		t.Fatal(errs)
	}
	lines := strings.Join(rec.Lines(), "\n")
	if !strings.Contains(lines, "INFO sink handed over sink=a kind=test stream=default to=B") || strings.Contains(lines, "sink deleted") {
		t.Errorf("a hand-over not logged as such:\n%s", lines)
	}
}

// TestErrorCodesAreClosed: whatever code a sink sets, status and metrics
// report one of sink.Codes; the sink's own code stays in last_error.
func TestErrorCodesAreClosed(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	s.Set(enginetest.Behavior{Err: &sink.Error{Code: "schema-violation", Message: "no", Permanent: true}})
	h.pushN(1)
	st := h.awaitSink("a", "rejected", func(s *confighubv1.SinkStatus) bool { return s.GetState() == failed })
	if st.GetLastErrorCode() != string(sink.CodeRejected) || !strings.Contains(st.GetLastError(), "schema-violation: no") {
		t.Fatalf("last error %q code %q, want code rejected and the sink's own code in the text", st.GetLastError(), st.GetLastErrorCode())
	}
}

// TestSinkSecretsScrubbed: a destination that quotes the sink's own
// secret (its token, a header value) in an error, its body or a health
// report has it replaced before status, logs and GetConfig see the text;
// a value shorter than 4 bytes is left (it would blank the message).
func TestSinkSecretsScrubbed(t *testing.T) {
	var logs ihar.SyncBuffer
	h := newHarness(t,
		engine.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		engine.WithSecretValues(func(s *confighubv1.Sink) []string {
			if s.GetName() == "gw" {
				return []string{"kpat_0123", "kpat_0123456789", "ab"}
			}
			return nil
		}))
	gw := h.put("gw", kindRunner, nil)
	gw.Set(enginetest.Behavior{Err: &sink.Error{Code: sink.CodeUnauthorized, Message: "token kpat_0123456789 is not valid (ab)",
		Body:         []byte(`{"message":"bad token kpat_0123456789"}`),
		EntityErrors: []*confighubv1.EntityError{{Errors: []*confighubv1.FieldError{{Message: "kpat_0123 again"}}}}}})
	h.pushN(1)
	st := h.awaitSink("gw", "unauthorized", func(s *confighubv1.SinkStatus) bool { return s.GetLastErrorCode() == "unauthorized" })
	if st.GetLastError() != "unauthorized: token <redacted> is not valid (ab)" || st.GetEntityErrors()[0].GetErrors()[0].GetMessage() != "<redacted> again" {
		t.Fatalf("last_error %q, entity error %v", st.GetLastError(), st.GetEntityErrors())
	}
	_, se, ok := h.e.LastFailed("gw")
	if !ok || strings.Contains(se.Error(), "kpat_") || strings.Contains(string(se.Body), "kpat_") {
		t.Fatalf("LastFailed: %v body %q", se, se.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := h.fleet.Runner("gw").Notifier(ctx)
	must(t, err)
	n.Health(errors.New("401 for token kpat_0123456789"))
	h.awaitSink("gw", "unreachable, scrubbed", func(s *confighubv1.SinkStatus) bool {
		return s.GetLastError() == "unreachable: 401 for token <redacted>"
	})
	if strings.Contains(logs.String(), "kpat_") {
		t.Fatalf("the log shows the secret:\n%s", logs.String())
	}
}

// TestStatusBoundsSinkErrors: whatever a destination answers, a sink's
// status stays small: at most 100 entity errors (32 KiB in all, each text
// cut) with entity_errors_omitted counting the rest, last_error at most
// 4 KiB; a success clears them. (A configuration with 100,000 bad entities
// made every GetStatus of its stream exceed the message limit.)
func TestStatusBoundsSinkErrors(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	ees := make([]*confighubv1.EntityError, 10_000)
	for i := range ees {
		ees[i] = &confighubv1.EntityError{EntityType: "route", EntityName: fmt.Sprintf("r%d-%s", i, strings.Repeat("n", 1000)),
			Errors: []*confighubv1.FieldError{{Type: "field", Field: "paths", Message: strings.Repeat("m", 5000)}}}
	}
	s.Set(enginetest.Behavior{Err: &sink.Error{Code: "rejected", Permanent: true, Message: strings.Repeat("x", 1<<20), EntityErrors: ees}})
	h.pushN(1)
	st := h.awaitState("a", confighubv1.SinkState_SINK_STATE_FAILED, 1)
	got := st.GetEntityErrors()
	if len(got) == 0 || len(got) > 100 || int(st.GetEntityErrorsOmitted())+len(got) != len(ees) {
		t.Fatalf("%d entity errors kept, %d omitted, of %d", len(got), st.GetEntityErrorsOmitted(), len(ees))
	}
	if n := proto.Size(st); n > 40<<10 {
		t.Fatalf("the status of one sink is %d bytes", n)
	}
	if e := got[0]; !strings.HasPrefix(e.GetEntityName(), "r0-nnn") || len(e.GetEntityName()) > 300 || len(e.GetErrors()[0].GetMessage()) > 1100 {
		t.Fatalf("first entity error not cut: name %d bytes, message %d bytes", len(e.GetEntityName()), len(e.GetErrors()[0].GetMessage()))
	}
	if le := st.GetLastError(); len(le) > 4200 || !strings.HasPrefix(le, "rejected: xxx") || !strings.HasSuffix(le, "more bytes cut)") {
		t.Fatalf("last_error: %d bytes, ends %q", len(le), le[max(0, len(le)-30):])
	}
	s.Set(enginetest.Behavior{})
	h.pushN(1)
	st = h.awaitApplied("a", 2)
	if len(st.GetEntityErrors()) != 0 || st.GetEntityErrorsOmitted() != 0 {
		t.Fatalf("a success kept %d entity errors, %d omitted", len(st.GetEntityErrors()), st.GetEntityErrorsOmitted())
	}
}

// Sink, SpecBytes and HasSink answer what ListSinks would, for sinks run
// here and peers, without copying every spec: the hub asks the first two
// on every PutSink, so putting N sinks one by one does not cost N*N/2
// spec copies, and HasSink on every GetConfig of a sink. Sink's answer is
// the caller's copy.
func TestSinkAndSpecBytes(t *testing.T) {
	p := &placement{owner: map[string]string{"a": "A", "b": "A", "p": "B"}, leader: "A"}
	h := newHarness(t, engine.WithOwnership(replicaOf{p, "A"}))
	h.put("a", "test", nil)
	h.putOn("b", "test", "other", nil)
	h.put("p", "test", nil)
	if h.e.Sink("missing") != nil {
		t.Fatal("Sink of a missing sink is not nil")
	}
	if h.e.Sink("p").GetName() != "p" {
		t.Fatalf("Sink(p) of a peer = %v", h.e.Sink("p"))
	}
	for name, want := range map[string]bool{"a": true, "p": true, "missing": false} {
		if got := h.e.HasSink(name); got != want {
			t.Fatalf("HasSink(%q) = %v, want %v", name, got, want)
		}
	}
	b := h.e.Sink("b")
	if b.GetName() != "b" || b.GetStream() != "other" || b.GetKind() != "test" {
		t.Fatalf("Sink(b) = %v", b)
	}
	b.Stream = "changed"
	if got := h.e.Sink("b").GetStream(); got != "other" {
		t.Fatalf("changing Sink's answer changed the engine's spec: stream %q", got)
	}
	specBytesMatchList(t, h.e, "two sinks and a peer", "a", "b", "p")
}

// specBytesMatchList fails t unless SpecBytes(x) is the size of the specs
// ListSinks answers less x's, for "", a name that is not a sink, and each
// of names.
func specBytesMatchList(t *testing.T, e *engine.Engine, after string, names ...string) {
	t.Helper()
	all := 0
	sizes := map[string]int{}
	for _, s := range e.ListSinks("") {
		sizes[s.GetName()] = proto.Size(s)
		all += sizes[s.GetName()]
	}
	for _, x := range append([]string{"", "missing"}, names...) {
		if got := e.SpecBytes(x); got != all-sizes[x] {
			t.Fatalf("after %s: SpecBytes(%q) = %d, ListSinks' specs less its hold %d", after, x, got, all-sizes[x])
		}
	}
}

// SpecBytes keeps a running total of the specs' sizes instead of sizing
// every spec on each PutSink; the total follows every way a spec comes,
// changes or goes: puts, replaces by a bigger and a smaller spec, a
// refused replace, a stream move, deletes, and, on a replica, peers put,
// replaced and deleted and sinks handed over either way by Reown.
func TestSpecBytesTotalFollowsEveryChange(t *testing.T) {
	p := &placement{owner: map[string]string{"a": "A", "b": "A", "c": "A", "p1": "B", "p2": "B"}, leader: "A"}
	h := newHarness(t, engine.WithOwnership(replicaOf{p, "A"}))
	put := func(name, stream string, pad int, invalid bool) error {
		f := map[string]any{"pad": strings.Repeat("x", pad)}
		if invalid {
			f["invalid"] = true
		}
		_, _, err := h.e.PutSink(&confighubv1.Sink{Name: name, Kind: kindTest, Stream: stream, Spec: &confighubv1.Sink_Custom{Custom: mustStruct(t, f)}})
		return err
	}
	names := []string{"a", "b", "c", "p1", "p2"}
	for _, s := range []struct {
		name, stream string
		pad          int
	}{{"a", "", 10}, {"b", "other", 0}, {"c", "", 100}, {"p1", "", 10}, {"p2", "", 50}} {
		must(t, put(s.name, s.stream, s.pad, false))
	}
	specBytesMatchList(t, h.e, "puts", names...)
	for _, step := range []struct {
		what         string
		name, stream string
		pad          int
	}{
		{"a sink replaced by a bigger spec", "a", "", 1000},
		{"a sink replaced by a smaller spec", "c", "", 5},
		{"a peer replaced by a bigger spec", "p1", "", 2000},
		{"a peer replaced by a smaller spec", "p2", "", 1},
		{"a sink put again unchanged", "a", "", 1000},
		{"a sink moved to another stream", "b", "", 30},
	} {
		must(t, put(step.name, step.stream, step.pad, false))
		specBytesMatchList(t, h.e, step.what, names...)
	}
	if err := put("a", "", 3, true); !errors.Is(err, sink.ErrInvalidSpec) {
		t.Fatalf("a refused replace: %v, want ErrInvalidSpec", err)
	}
	specBytesMatchList(t, h.e, "a refused replace", names...)
	must(t, h.e.DeleteSink("b"))
	must(t, h.e.DeleteSink("p2"))
	specBytesMatchList(t, h.e, "deleting a sink and a peer", names...)
	// Hand-overs: the peer p1 starts here, the sink a goes on elsewhere.
	p.set("p1", "A")
	p.set("a", "B")
	if errs := h.e.Reown(); len(errs) != 0 {
		t.Fatal(errs)
	}
	specBytesMatchList(t, h.e, "hand-overs", names...)
	for _, name := range []string{"a", "p1", "c"} {
		must(t, h.e.DeleteSink(name))
		specBytesMatchList(t, h.e, "deleting "+name, names...)
	}
	if got := h.e.SpecBytes(""); got != 0 {
		t.Fatalf("SpecBytes of no sink = %d", got)
	}
}

// entityMetrics records the entity_errors metric of each sink.
type entityMetrics struct {
	engine.NopMetrics
	mu sync.Mutex
	n  map[string]int
}

func (m *entityMetrics) EntityErrors(sink, _ string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[sink] = n
}

func (m *entityMetrics) of(sink string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[sink]
}

// TestSkipBackClearsRejection: A applied, B rejected with entity errors,
// then A pushed again: the sink skips A (its hash is applied) and shows
// no failure any more: last_error, its code and entity_errors are empty,
// the rejection is previous_error, and the entity_errors metric is 0.
func TestSkipBackClearsRejection(t *testing.T) {
	met := &entityMetrics{n: map[string]int{}}
	h := newHarness(t, engine.WithMetrics(met))
	gw := h.put("gw", kindTest, nil)
	h.push("", "A")
	h.awaitApplied("gw", 1)
	ee := []*confighubv1.EntityError{{EntityType: "service", EntityName: "s", Errors: []*confighubv1.FieldError{{Field: "protocol", Message: "expected one of: grpc, http"}}}}
	gw.Set(enginetest.Behavior{Err: &sink.Error{Code: "rejected", Message: "invalid declarative configuration", Permanent: true, EntityErrors: ee}})
	h.push("", "B")
	h.awaitSink("gw", "B rejected", func(s *confighubv1.SinkStatus) bool {
		return s.GetState() == confighubv1.SinkState_SINK_STATE_FAILED && s.GetRejectedGeneration() == 2 && len(s.GetEntityErrors()) == 1
	})
	if met.of("gw") != 1 {
		t.Fatalf("entity_errors metric %d after the rejection, want 1", met.of("gw"))
	}
	gw.Set(enginetest.Behavior{})
	h.push("", "A")
	st := h.awaitSink("gw", "A skipped", func(s *confighubv1.SinkStatus) bool {
		return s.GetState() == confighubv1.SinkState_SINK_STATE_SKIPPED && s.GetAppliedGeneration() == 3
	})
	if st.GetLastError() != "" || st.GetLastErrorCode() != "" || len(st.GetEntityErrors()) != 0 {
		t.Fatalf("skipped back to the applied hash, but still shows last_error %q (%q), %d entity errors", st.GetLastError(), st.GetLastErrorCode(), len(st.GetEntityErrors()))
	}
	if st.GetPreviousErrorCode() != "rejected" || !strings.Contains(st.GetPreviousError(), "invalid declarative configuration") {
		t.Fatalf("previous_error %q (%q), want the rejection", st.GetPreviousError(), st.GetPreviousErrorCode())
	}
	if met.of("gw") != 0 {
		t.Fatalf("entity_errors metric %d after the skip, want 0", met.of("gw"))
	}
}

// TestSupersededGenerationIsTracked: two pushes acked together publish in
// either order; a generation published after a newer one is never offered
// to a sink, but its status is kept, counted and converges with the newer.
func TestSupersededGenerationIsTracked(t *testing.T) {
	h := newHarness(t)
	s := h.put("a", kindTest, nil)
	now := h.clock.Now()
	h.e.Publish(enginetest.Config("default", 2, "c-2", now))
	h.e.Publish(enginetest.Config("default", 1, "c-1", now))
	h.awaitApplied("a", 2)
	snap := h.await("", "both generations converged", func(r *confighubv1.GetStatusResponse) bool {
		g := r.GetGenerations()
		return len(g) == 2 && g[0].GetGeneration() == 1 && g[1].GetGeneration() == 2 &&
			g[0].GetConvergeTime() != nil && g[1].GetConvergeTime() != nil
	})
	if snap.GetGeneration() != 2 {
		t.Fatalf("current generation %d, want 2", snap.GetGeneration())
	}
	for _, a := range s.Applied() {
		if a == 1 {
			t.Fatalf("generation 1 was offered after 2: applied %v", s.Applied())
		}
	}
}
