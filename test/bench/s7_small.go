package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/test/bench/rawack"
)

const (
	smallSize    = 5 << 10
	smallClients = 32
	smallStreams = 16
	smallWarm    = 1 // rounds not kept
)

// scenarioSmall: scenario 7. 5 KiB pushes from 32 concurrent clients,
// all on one stream, then spread over 16 streams, against the serial
// fdatasync floor measured in the same run: one writer that pwrites a
// 5 KiB record into a preallocated file and fdatasyncs it, in a loop. A
// store that flushes each push on its own cannot pass the floor; the
// targets need concurrent pushes to share flushes. Beside them, the same
// clients push the same bytes to a gRPC server with no interceptors (only
// message-size limits set) that answers at once (rawack with no file):
// the rate of the transport alone, in the same run.
func scenarioSmall(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer e.close()
	f, err := rawack.Preallocate(filepath.Join(e.dir, "floor.rec"), 64<<10)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ceil, err := startAnswerOnly()
	if err != nil {
		return nil, err
	}
	defer ceil.close()
	base := genConfig(smallSize)
	var stamp atomic.Int64
	span := o.smallSpan

	// cpu[k] holds the CPU time per operation of each round of fns[k]
	// (the floor, one stream, 16 streams, the ceiling), the warm-up's
	// first.
	cpu := make([][]time.Duration, 4)
	floor := func() (time.Duration, error) {
		rec := stamped(base, int(stamp.Add(1)))
		n := 0
		c0 := cpuTime()
		defer func() { cpu[0] = append(cpu[0], perOp(cpuTime()-c0, n)) }()
		t0 := time.Now()
		for time.Since(t0) < span {
			if _, err := f.WriteAt(rec, 4096); err != nil {
				return 0, err
			}
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				return 0, err
			}
			n++
		}
		return perOp(time.Since(t0), n), nil
	}
	// clients runs smallClients goroutines, each calling push(client
	// number, its next config) in a loop for one span, and returns the
	// time per push.
	clients := func(k int, push func(c int, cfg []byte) error) (time.Duration, error) {
		var n, errs atomic.Int64
		var wg sync.WaitGroup
		c0 := cpuTime()
		defer func() { cpu[k] = append(cpu[k], perOp(cpuTime()-c0, int(n.Load()))) }()
		t0 := time.Now()
		for c := range smallClients {
			wg.Go(func() {
				for time.Since(t0) < span && ctx.Err() == nil {
					if err := push(c, stamped(base, int(stamp.Add(1)))); err != nil {
						errs.Add(1)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		if k := errs.Load(); k > 0 {
			return 0, fmt.Errorf("%d pushes failed", k)
		}
		return perOp(time.Since(t0), int(n.Load())), nil
	}
	pushers := func(streams int) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			k := 1
			if streams > 1 {
				k = 2
			}
			return clients(k, func(c int, cfg []byte) error {
				stream := ""
				if streams > 1 {
					stream = fmt.Sprintf("small-%02d", c%streams)
				}
				_, err := e.client.Hub.PushConfig(ctx, &confighubv1.PushConfigRequest{Stream: stream, Config: cfg, Format: confighubv1.Format_FORMAT_JSON})
				return err
			})
		}
	}
	ceiling := func() (time.Duration, error) {
		return clients(3, func(_ int, cfg []byte) error { return ceil.push(ctx, cfg) })
	}
	t, load, err := o.interleaved(7, smallWarm, o.smallRounds, floor, pushers(1), pushers(smallStreams), ceiling)
	if err != nil {
		return nil, err
	}
	rate := func(d []time.Duration) float64 { return 1000 / medianMS(d) }
	log("  5 KiB: floor %.0f/s, 1 stream %.0f/s, %d streams %.0f/s, transport ceiling %.0f/s, load %s", rate(t[0]), rate(t[1]), smallStreams, rate(t[2]), rate(t[3]), load)
	row := func(name string, d []time.Duration, min float64) Row {
		r := Row{Scenario: name, Unit: "/s", Hub: rate(d), Baseline: rate(t[0]), Runs: o.smallRounds,
			Target: fmt.Sprintf("ratio >= %.0f (x serial fdatasync floor)", min)}
		r.Ratio = r.Hub / r.Baseline
		r.OK = r.Ratio >= min
		r.withSpread(d, t[0], load)
		r.HubSpread, r.BaseSpread = rateSpread(d), rateSpread(t[0])
		return r
	}
	// cpuBound says how much CPU one operation of fns[k] took and the
	// rate that alone allows on this machine's cores.
	cpuBound := func(k int) string {
		us := medianMS(cpu[k][smallWarm:]) * 1000
		most := float64(runtime.NumCPU()) * 1e6 / us
		return fmt.Sprintf("CPU per push (this process: clients and server, user+system, median of the rounds) %.0f us, so at most %.0f/s on %d cores, %.2fx the floor (whose pwrite+fdatasync takes %.0f us of CPU each)",
			us, most, runtime.NumCPU(), most/rate(t[0]), medianMS(cpu[0][smallWarm:])*1000)
	}
	rows := []Row{
		row(fmt.Sprintf("7 5 KiB pushes acked/s, %d clients, one stream", smallClients), t[1], 2),
		row(fmt.Sprintf("7 5 KiB pushes acked/s, %d clients, %d streams", smallClients, smallStreams), t[2], 3),
	}
	rows[0].Note = fmt.Sprintf("rounds of %v each, interleaved in random order with the floor (one 5 KiB pwrite + fdatasync per record, serially) and the ceiling; %s", span, cpuBound(1))
	rows[1].Note = cpuBound(2)
	c := row(fmt.Sprintf("7 5 KiB pushes answered/s, %d clients, a server that only answers", smallClients), t[3], 0)
	c.Info, c.OK, c.Target = true, true, "-"
	c.Note = "the transport alone: the same clients and bytes (one connection) to a gRPC server with no interceptors and only message-size limits set (rawack, no file) that answers at once; " + cpuBound(3)
	return append(rows, c), nil
}

// perOp is the time per operation of n operations in d (d when n is 0).
func perOp(d time.Duration, n int) time.Duration {
	if n == 0 {
		return d
	}
	return d / time.Duration(n)
}

// rateSpread is the p10-p90 of per-operation times as rates per second
// (the slow end first).
func rateSpread(d []time.Duration) string {
	if len(d) < 2 {
		return ""
	}
	return fmt.Sprintf("%.0f-%.0f/s", 1000/quantileMS(d, 0.9), 1000/quantileMS(d, 0.1))
}
