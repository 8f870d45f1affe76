package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// quantileMS is the q-quantile (nearest rank) of d in milliseconds.
func quantileMS(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return ms(s[min(max(i, 0), len(s)-1)])
}

// spreadMS is "p10-p90" of d in milliseconds: how far a single run may
// stray from the median on this machine.
func spreadMS(d []time.Duration) string {
	if len(d) < 2 {
		return ""
	}
	return fmt.Sprintf("%s-%s", trimVal(quantileMS(d, 0.1)), trimVal(quantileMS(d, 0.9)))
}

func trimVal(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// loadAvg is the 1, 5 and 15 minute load averages from /proc/loadavg: the
// other work on the machine while a figure was taken.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// interleave runs each of fns once per round, in a new random order each
// round, warm rounds first (not kept), then rounds kept: the hub and its
// baseline share whatever else the machine does during the run, and
// neither always runs right after the other (caches, write-back).
func interleave(rng *rand.Rand, warm, rounds int, fns ...func() (time.Duration, error)) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(fns))
	order := make([]int, len(fns))
	for i := range order {
		order[i] = i
	}
	for r := -warm; r < rounds; r++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			d, err := fns[i]()
			if err != nil {
				return nil, err
			}
			if r >= 0 {
				out[i] = append(out[i], d)
			}
		}
	}
	return out, nil
}

// interleaved is interleave for scenario seq of this run (its generator
// seeded by the run's start time), with the load average as it starts.
func (o opts) interleaved(seq uint64, warm, rounds int, fns ...func() (time.Duration, error)) (t [][]time.Duration, load string, err error) {
	rng := rand.New(rand.NewPCG(uint64(o.startTime.UnixNano()), seq))
	load = loadAvg()
	t, err = interleave(rng, warm, rounds, fns...)
	return t, load, err
}

// timed returns how long f took.
func timed(f func() error) (time.Duration, error) {
	t0 := time.Now()
	err := f()
	return time.Since(t0), err
}

// cpuTimed is timed that also appends to cpu the CPU time this process
// (client and in-process server alike, every thread) spent meanwhile.
func cpuTimed(cpu *[]time.Duration, f func() error) (time.Duration, error) {
	c0 := cpuTime()
	d, err := timed(f)
	*cpu = append(*cpu, cpuTime()-c0)
	return d, err
}

// cpuNote says how much CPU the hub's samples and the baseline's took
// (medians) and what that alone bounds on this machine's cores: the
// hub's median can be no shorter than its CPU spread over every core.
func cpuNote(what string, hubCPU, baseCPU []time.Duration, baseWall float64) string {
	h, b := medianMS(hubCPU), medianMS(baseCPU)
	floor := h / float64(runtime.NumCPU())
	return fmt.Sprintf("CPU per %s (this process: client and server, user+system, medians) hub %s ms, baseline %s ms; on %d cores the hub's CPU alone takes at least %s ms, %.2fx the baseline's median",
		what, trimVal(h), trimVal(b), runtime.NumCPU(), trimVal(floor), floor/baseWall)
}
