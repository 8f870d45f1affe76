package engine

import (
	"testing"
	"time"
)

// TestBackoffDelay: exponential growth, the cap, and jitter spreading each
// delay within ±jitter (never above the cap).
func TestBackoffDelay(t *testing.T) {
	b := backoff{initial: time.Second, max: 10 * time.Second, multiplier: 2, jitter: 0.2}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		if got := b.delay(n, 0.5); got != want {
			t.Errorf("delay(%d) = %s, want %s", n, got, want)
		}
	}
	if lo, hi := b.delay(2, 0), b.delay(2, 0.999999); lo != 1600*time.Millisecond || hi < 2399*time.Millisecond || hi > 2400*time.Millisecond {
		t.Errorf("jitter spread of 2s: [%s, %s], want [1.6s, 2.4s]", lo, hi)
	}
	if hi := b.delay(10, 0.999999); hi != 10*time.Second {
		t.Errorf("jitter above the cap: %s", hi)
	}
}
