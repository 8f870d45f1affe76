package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"github.com/confighub/confighub/config"
)

// scenarioScaling: scenario 8, the two scaling tables of
// docs/performance.md. Ack time and the hub's peak RSS against config
// size (UploadConfig to a fresh hub child per sample, beside the raw
// streamed baseline), and fan-out time and the hub's CPU against sink
// count (in-process hub, gateways in the fleet child).
func scenarioScaling(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	var rows []Row
	dir, err := os.MkdirTemp("", "confighub-bench-scaling-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	raw, err := startRaw(dir, o.uploadMax)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer e.close()
	const samples = 5
	for _, mib := range []int{1, 10, 50, 100, 200} {
		size := mib << 20
		if size > o.uploadMax {
			break
		}
		// Peak RSS: one upload to a fresh hub in its own process.
		_, mem, err := uploadOnce(ctx, size)
		if err != nil {
			return nil, err
		}
		// Ack: the in-process hub, warm (recycled files), interleaved with
		// the raw streamed baseline.
		base := genConfig(size)
		stamp := 0
		hub := func() (time.Duration, error) {
			stamp++
			cfg := stamped(base, stamp)
			sum := config.Hash(cfg)
			return timed(func() error { return uploadConfig(ctx, e.client, cfg, sum) })
		}
		rawUp := func() (time.Duration, error) {
			stamp++
			cfg := stamped(base, stamp)
			return timed(func() error { return raw.upload(ctx, cfg) })
		}
		load := loadAvg()
		t, err := interleave(rand.New(rand.NewPCG(uint64(size), 8)), 1, samples, hub, rawUp)
		if err != nil {
			return nil, err
		}
		log("  %d MiB: upload ack %.0f ms (raw %.0f ms), peak RSS %.0f MiB", mib, medianMS(t[0]), medianMS(t[1]), mem.PeakMiB)
		r := Row{Scenario: fmt.Sprintf("8 upload ack %d MiB", mib), Unit: "ms", Hub: medianMS(t[0]), Baseline: medianMS(t[1]),
			Ratio: medianMS(t[0]) / medianMS(t[1]), Target: "-", Info: true, OK: true, Runs: samples,
			Note: fmt.Sprintf("hub peak RSS during one upload (fresh hub child) %.0f MiB = config + %.0f MiB", mem.PeakMiB, mem.PeakMiB-float64(mib))}
		r.withSpread(t[0], t[1], load)
		rows = append(rows, r)
	}
	counts := []int{10, 100, 1000}
	fl, err := startFleet(min(o.gateways, 1000))
	if err != nil {
		return nil, err
	}
	defer fl.close()
	for _, n := range counts {
		if n > len(fl.urls) {
			break
		}
		t, cpu, err := fanOut(ctx, fl.urls[:n])
		if err != nil {
			return nil, err
		}
		log("  %d sinks: all applied in %.0f ms, hub CPU %.0f ms", n, medianMS(t), medianMS(cpu))
		rows = append(rows, Row{Scenario: fmt.Sprintf("8 %d sinks applied a 1 MiB config", n), Unit: "ms", Hub: medianMS(t), Target: "-", Info: true, OK: true,
			Runs: len(t), HubSpread: spreadMS(t), Load: loadAvg(), Note: fmt.Sprintf("hub CPU (user+system) %.0f ms per push", medianMS(cpu))})
	}
	return rows, nil
}

// fanOut pushes a 1 MiB config to a hub with one kong sink per URL and
// returns, per run, the time until all applied and the process CPU time
// it took (the hub is this process; the gateways are not).
func fanOut(ctx context.Context, urls []string) (times, cpu []time.Duration, err error) {
	e, err := newEnv(ctx, envOptions{kongURLs: urls})
	if err != nil {
		return nil, nil, err
	}
	defer e.close()
	base := genConfig(1 << 20)
	for i := -1; i < 3; i++ {
		cfg := stamped(base, 1000+i)
		wctx, stop := context.WithTimeout(ctx, 2*time.Minute)
		w := watchApplied(wctx, e, isGateway, len(urls))
		c0, t0 := cpuTime(), time.Now()
		gen, err := e.push(ctx, cfg)
		if err != nil {
			stop()
			return nil, nil, err
		}
		at, err := w.wait(gen)
		c1 := cpuTime()
		stop()
		if err != nil {
			return nil, nil, err
		}
		if i >= 0 {
			times, cpu = append(times, at.Sub(t0)), append(cpu, c1-c0)
		}
	}
	return times, cpu, nil
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
