package engine_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"testing"

	"pgregory.net/rapid"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
)

// TestPropertyConvergence drives random pushes (with repeated contents, so
// hash skips happen), sink additions in random waves, faults (retryable
// errors, hangs, panics, permanent rejections) and clock jumps. Once the
// pushes stop and the faults clear, a last generation is pushed and:
// every sink applied it, no sink ever applied generations out of order or
// concurrently, the status counts match what the sinks saw, and the
// engine holds a bounded number of configs per sink.
func TestPropertyConvergence(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt)
		names := []string{"s0", "s1", "s2", "s3", "s4"}
		added := map[string]bool{}
		contents := []string{"a", "b", "c", "d"}
		faults := []enginetest.Behavior{
			{},
			{Err: errors.New("connection refused")},
			{Hang: true},
			{Panic: "boom"},
			{Err: &sink.Error{Code: "rejected", Permanent: true, Message: "invalid"}},
		}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0, 1:
				h.push("", rapid.SampledFrom(contents).Draw(rt, "content"))
			case 2:
				name := rapid.SampledFrom(names).Draw(rt, "sink")
				if added[name] {
					continue
				}
				added[name] = true
				h.put(name, kindTest, &confighubv1.SinkOptions{
					Timeout:        dur(time.Second),
					Wave:           uint32(rapid.IntRange(0, 2).Draw(rt, "wave")),
					CancelInFlight: rapid.Bool().Draw(rt, "cancel_in_flight"),
					Backoff:        &confighubv1.BackoffOptions{Initial: dur(100 * time.Millisecond), Max: dur(2 * time.Second)},
				})
			case 3:
				name := rapid.SampledFrom(names).Draw(rt, "faulty")
				if added[name] {
					h.fleet.Sink(name).Set(rapid.SampledFrom(faults).Draw(rt, "fault"))
				}
			case 4:
				h.clock.Advance(time.Duration(rapid.IntRange(0, 3000).Draw(rt, "ms")) * time.Millisecond)
			}
		}
		if len(added) == 0 {
			h.put("s0", kindTest, nil)
			added["s0"] = true
		}
		// Faults clear, pushes stop with one last, new configuration. Any
		// hung apply ends with its 1s timeout (its timer was set before
		// the apply started, so before this advance).
		for name := range added {
			h.fleet.Sink(name).Set(enginetest.Behavior{})
		}
		final := h.push("", "final")
		h.clock.Advance(time.Second)
		for name := range added {
			st := h.awaitApplied(name, final.Generation)
			s := h.fleet.Sink(name)
			got := s.Applied()
			if s.OutOfOrder() || s.MaxInFlight() > 1 {
				rt.Fatalf("%s: applied %v (out of order %v), max in flight %d", name, got, s.OutOfOrder(), s.MaxInFlight())
			}
			if len(got) == 0 || got[len(got)-1] != final.Generation {
				rt.Fatalf("%s: applied %v, want it to end at %d", name, got, final.Generation)
			}
			if st.GetAppliesTotal() != uint64(len(got)) {
				rt.Fatalf("%s: applies_total %d, the sink saw %d applies", name, st.GetAppliesTotal(), len(got))
			}
		}
		// Converged: every sink's slot and last applied config are the
		// stream's current one, and no failure is remembered.
		distinct, perSink := engine.HeldConfigs(h.e)
		if perSink != 1 || distinct != 1 {
			rt.Fatalf("configs held after convergence: %d distinct, %d for one sink; want the current one only", distinct, perSink)
		}
	})
}

// BenchmarkSlot measures Publish into sinks that are busy (every push
// replaces the pending generation: the coalescing path).
func BenchmarkSlot(b *testing.B) {
	for _, sinks := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("sinks=%d", sinks), func(b *testing.B) {
			h := newHarness(b)
			for i := 0; i < sinks; i++ {
				s := h.put(fmt.Sprintf("s%04d", i), kindTest, nil)
				s.Set(enginetest.Behavior{Block: true})
			}
			h.pushN(1)
			cfgs := make([]*config.Config, 1024)
			for i := range cfgs {
				cfgs[i] = enginetest.Config("default", 0, fmt.Sprintf("bench-%d", i), t0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := cfgs[i%len(cfgs)]
				// A new Config sharing the bytes, as the hub builds one per push.
				h.e.Publish(config.New(c.Stream, uint64(i+2), c.Hash, c.Format, c.Raw, nil, nil, t0))
			}
			b.StopTimer()
			for i := 0; i < sinks; i++ {
				s := h.fleet.Sink(fmt.Sprintf("s%04d", i))
				s.Set(enginetest.Behavior{})
				s.ReleaseAll()
			}
		})
	}
}

// BenchmarkFanout1000: one generation to 1,000 gateway sinks whose apply
// returns at once, through the default 64 apply slots: the engine's own
// cost per publish (wake-ups, slot hand-overs, status), from Publish to
// the generation converged.
func BenchmarkFanout1000(b *testing.B) {
	h := newHarness(b, engine.WithWatchBuffer(1<<14))
	const sinks = 1000
	for i := 0; i < sinks; i++ {
		h.put(fmt.Sprintf("gw%04d", i), kindGateway, nil)
	}
	converged := func(g *confighubv1.GenerationStatus, gen uint64) bool {
		return g.GetGeneration() == gen && g.GetSinksApplied() == sinks
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		ch := h.e.View().Watch(ctx, "default", 0)
		<-ch // the snapshot
		cfg := h.push("", fmt.Sprintf("fanout-%d", i))
		for ev := range ch {
			if snap := ev.GetSnapshot(); snap != nil {
				b.Fatal("watcher cut over; raise the buffer")
			}
			if converged(ev.GetGeneration(), cfg.Generation) {
				break
			}
		}
		cancel()
	}
}
