package engine_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestIdleSinksHoldNoGoroutine: a sink with nothing to do holds no
// goroutine (a hub with 10,000 idle Kong data planes would hold 10,000);
// a new generation starts one per sink again, and every sink applies it.
func TestIdleSinksHoldNoGoroutine(t *testing.T) {
	h := newHarness(t)
	base := runtime.NumGoroutine()
	const n = 200
	for i := range n {
		h.put(fmt.Sprintf("s%d", i), kindTest, nil)
	}
	idle := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > base+n/10 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d goroutines for %d idle sinks (%d before them)", what, runtime.NumGoroutine(), n, base)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	idle("no configuration yet")
	for gen := 1; gen <= 2; gen++ {
		cfg := h.push("", fmt.Sprintf("c%d", gen))
		for i := range n {
			h.awaitApplied(fmt.Sprintf("s%d", i), cfg.Generation)
		}
		idle(fmt.Sprintf("generation %d applied", gen))
	}
}
