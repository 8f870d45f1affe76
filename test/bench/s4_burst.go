package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	burstRate  = 1000 // pushes per second
	burstApply = 200 * time.Millisecond
	// burstWorkers push concurrently so that one slow commit does not stall
	// the schedule (the store serialises commits anyway).
	burstWorkers = 8
)

func heapMiB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// scenarioBurst: scenario 4.
func scenarioBurst(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer e.close()
	const name = "slow"
	if err := e.putSinks(ctx, benchSpec(name, burstApply, false, false, nil)); err != nil {
		return nil, err
	}
	base := genConfig(4 << 10)
	// Warm up: one push applied, so the sink, the store and the gRPC
	// connection exist before the heap is read.
	gen, err := e.push(ctx, stamped(base, 0))
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = e.applies.waitDone(wctx, name, gen)
	cancel()
	if err != nil {
		return nil, err
	}
	total := int(o.burst / time.Millisecond * burstRate / 1000)
	appliesBefore := e.applies.count(name)
	heapBefore := heapMiB()

	type ack struct {
		gen uint64
		at  time.Time
	}
	var (
		next   atomic.Int64
		mu     sync.Mutex
		last   ack
		acked  int
		errs   atomic.Int64
		wg     sync.WaitGroup
		start  = time.Now()
		period = time.Second / burstRate
	)
	for range burstWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				if d := time.Until(start.Add(time.Duration(i) * period)); d > 0 {
					time.Sleep(d) // the schedule: push i at start + i ms
				}
				g, err := e.push(ctx, stamped(base, i+1))
				now := time.Now()
				if err != nil {
					errs.Add(1)
					continue
				}
				mu.Lock()
				acked++
				if g > last.gen {
					last = ack{g, now}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := errs.Load(); n > 0 {
		return nil, fmt.Errorf("%d pushes failed", n)
	}
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	done, err := e.applies.waitDone(wctx, name, last.gen)
	cancel()
	if err != nil {
		return nil, err
	}
	startG, _ := e.applies.times(name, last.gen)
	// Let the worker settle (status, applied record) before the heap read.
	time.Sleep(2 * burstApply)
	applies := e.applies.count(name) - appliesBefore
	heapAfter := heapMiB()
	rate := float64(acked) / elapsed.Seconds()
	bound := int(elapsed/burstApply) + 2
	log("  %d pushes in %.1fs (%.0f/s), %d applies (bound %d), last gen %d: start +%.0f ms, done +%.0f ms, heap %.1f -> %.1f MiB",
		acked, elapsed.Seconds(), rate, applies, bound, last.gen, ms(startG.Sub(last.at)), ms(done.Sub(last.at)), heapBefore, heapAfter)

	dur := fmt.Sprintf("%.0fs", o.burst.Seconds())
	rows := []Row{
		{Scenario: "4 pushes acked per second (" + dur + ", 8 clients)", Unit: "/s", Hub: rate, Target: fmt.Sprintf("%d/s offered", burstRate), Info: true, OK: true, Runs: 1,
			Note: "the bbolt store fsyncs every commit; the offered rate is met only if a commit takes < 1 ms"},
		{Scenario: "4 applies into a 200 ms sink (" + dur + ")", Unit: "", Hub: float64(applies), Target: fmt.Sprintf("<= %d (duration/200ms + 2)", bound), OK: applies <= bound, Runs: 1,
			Note: fmt.Sprintf("%d pushes coalesced into %d applies", acked, applies)},
		{Scenario: "4 last generation: last push -> apply starts", Unit: "ms", Hub: ms(startG.Sub(last.at)), Target: "<= 220 ms (one apply in flight, +10%)", OK: startG.Sub(last.at) <= burstApply*11/10, Runs: 1},
		{Scenario: "4 last generation: last push -> applied", Unit: "ms", Hub: ms(done.Sub(last.at)), Target: "<= 420 ms (in flight + its own, +10%)", OK: done.Sub(last.at) <= 2*burstApply+burstApply/10, Runs: 1},
		{Scenario: "4 heap after / before the burst", Unit: "MiB", Hub: heapAfter, Baseline: heapBefore, Ratio: heapAfter / heapBefore, Target: "growth <= 4 MiB", OK: heapAfter-heapBefore <= 4, Runs: 1},
	}
	return rows, nil
}
