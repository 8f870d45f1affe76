package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

// wakeTries is how many times scenario 1 measures wakeDelays.
const wakeTries = 200

// wakeTry is one measure of wakeDelays: how long the started goroutine
// waited, and where it ran.
type wakeTry struct {
	wait  time.Duration
	where ranOn
}

// ranOn is where a started goroutine ran, against its starter's vCPU.
type ranOn uint8

const (
	ranUnknown      ranOn = iota // getcpu(2) failed
	ranSameCPU                   // the vCPU its starter spun on
	ranOtherCPU                  // another vCPU
	ranStarterMoved              // the starter itself changed vCPU while it spun
)

// wakeDelays measures n times how long a goroutine started from a busy one
// waits before it runs, after the process idled for 2 ms. A proxy for the
// 1 MiB push, whose check and whose write and hash run side by side only
// once that wait is over. Where the wait comes from shows in which vCPU
// ran the goroutine: the idle one, which had to be woken, or the
// starter's, which had to stop spinning or be preempted.
func wakeDelays(n int) []wakeTry {
	out := make([]wakeTry, 0, n)
	for range n {
		out = append(out, wakeOnce())
	}
	return out
}

// wakeOnce idles 2 ms, as between two pushes, then starts a goroutine and
// spins, as the handler checking a config, until it runs or for 2 ms.
func wakeOnce() wakeTry {
	time.Sleep(2 * time.Millisecond)
	var started, cpu atomic.Int64
	t0 := time.Now()
	c0 := thisCPU()
	done := make(chan struct{})
	go func() {
		started.Store(int64(time.Since(t0)) + 1)
		cpu.Store(int64(thisCPU()))
		close(done)
	}()
	for started.Load() == 0 && time.Since(t0) < 2*time.Millisecond {
	}
	c1 := thisCPU()
	<-done
	t := wakeTry{wait: time.Duration(started.Load() - 1)}
	switch c := int(cpu.Load()); {
	case c < 0 || c0 < 0:
	case c0 != c1:
		t.where = ranStarterMoved
	case c == c0:
		t.where = ranSameCPU
	default:
		t.where = ranOtherCPU
	}
	return t
}

// waits splits the waits of tries by where the goroutine ran (tries whose
// starter moved, or where getcpu failed, are in neither).
func waits(tries []wakeTry) (same, other []time.Duration) {
	for _, t := range tries {
		switch t.where {
		case ranSameCPU:
			same = append(same, t.wait)
		case ranOtherCPU:
			other = append(other, t.wait)
		}
	}
	return same, other
}

// wakeRows measures wakeDelays and pinnedWakeDelays and returns their info
// rows: context for the 1 MiB push's row, whose two legs overlap only once
// the wait is over.
func wakeRows(log func(string, ...any)) []Row {
	tries := wakeDelays(wakeTries)
	all := make([]time.Duration, len(tries))
	for i, t := range tries {
		all[i] = t.wait
	}
	const what = "1 wait before a goroutine started by a spinning one runs (after 2 ms idle)"
	log("  wait before a goroutine started by a spinning one runs (after 2 ms idle): median %.3f ms (%s)", medianMS(all), spreadMS(all))
	rows := []Row{{Scenario: what, Unit: "ms", Hub: medianMS(all), HubSpread: spreadMS(all),
		Target: "-", OK: true, Info: true, Runs: len(all),
		Note: "a proxy for the push's second leg (write and SHA-256), started as the check begins: the starter spins for up to 2 ms; in a push, once the wait outlasts the check (0.8-1.0 ms for 1 MiB), the leg runs after it on the same core"}}
	if same, other := waits(tries); len(same)+len(other) > 0 {
		share := 100 * float64(len(same)) / float64(len(same)+len(other))
		left := len(tries) - len(same) - len(other)
		log("    on the spinning one's vCPU in %.0f%% of the tries (%d left out: the spinning one moved): median wait %s there, %s on another", share, left, there(same), there(other))
		rows = append(rows, Row{Scenario: "1 the same wait: share of tries run on the spinning one's vCPU", Unit: "%", Hub: share,
			Target: "-", OK: true, Info: true, Runs: len(same) + len(other),
			Note: fmt.Sprintf("median wait %s on the spinning one's vCPU, %s on another (getcpu(2) in both goroutines; %d tries left out, the spinning one changed vCPU)", there(same), there(other), left)})
	}
	pinned, err := pinnedWakeDelays(wakeTries)
	if err != nil {
		log("    pinned: not measured: %v", err)
		return rows
	}
	same, other := waits(pinned)
	log("    the spinning one pinned to one vCPU, every other thread to the other: %d of %d tries ran on the other vCPU, median wait %s; %d on the spinning one's, %s", len(other), len(pinned), there(other), len(same), there(same))
	return append(rows, Row{Scenario: "1 the same wait, the spinning one pinned to one vCPU, all other threads to the other", Unit: "ms", Hub: medianMS(other), HubSpread: spreadMS(other),
		Target: "-", OK: true, Info: true, Runs: len(other),
		Note: fmt.Sprintf("the tries whose goroutine ran on the other vCPU (%d of %d): its wait is that idle vCPU's wake-up and the runtime's hand-over; on the spinning one's vCPU (a thread started after the pinning pass, or the spinning one ran it itself after 2 ms): %d tries, median wait %s", len(other), len(pinned), len(same), there(same))})
}

// there is the median wait and spread of d, or "no try".
func there(d []time.Duration) string {
	if len(d) == 0 {
		return "no try"
	}
	return fmt.Sprintf("%.3f ms (%s)", medianMS(d), spreadMS(d))
}
