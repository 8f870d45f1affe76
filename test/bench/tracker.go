package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hub"
)

// tracker follows a stream's status through the hub's own Watch and tells
// when a set of sinks applied a generation.
type tracker struct {
	mu      sync.Mutex
	applied map[string]uint64
	waiters []*waiter
	done    chan struct{}
}

type waiter struct {
	match func(sink string) bool
	want  int
	gen   uint64
	ch    chan time.Time
}

func startTracker(ctx context.Context, h *hub.Hub) *tracker {
	t := &tracker{applied: map[string]uint64{}, done: make(chan struct{})}
	ch := h.Watch(ctx, config.DefaultStream, 0)
	go func() {
		defer close(t.done)
		for ev := range ch {
			t.handle(ev)
		}
	}()
	return t
}

func (t *tracker) handle(ev *confighubv1.WatchStatusResponse) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case ev.GetSnapshot() != nil:
		clear(t.applied)
		for _, s := range ev.GetSnapshot().GetSinks() {
			t.applied[s.GetSink()] = s.GetAppliedGeneration()
		}
	case ev.GetSink() != nil:
		s := ev.GetSink()
		t.applied[s.GetSink()] = s.GetAppliedGeneration()
	case ev.GetSinkRemoved() != "":
		delete(t.applied, ev.GetSinkRemoved())
	default:
		return
	}
	t.check(time.Now())
}

// check resolves the waiters whose condition holds. t.mu is held.
func (t *tracker) check(now time.Time) {
	kept := t.waiters[:0]
	for _, w := range t.waiters {
		n := 0
		for name, g := range t.applied {
			if g >= w.gen && w.match(name) {
				n++
			}
		}
		if n >= w.want {
			w.ch <- now
			continue
		}
		kept = append(kept, w)
	}
	t.waiters = kept
}

// wait returns when `want` sinks matching match applied gen (or later).
func (t *tracker) wait(ctx context.Context, match func(string) bool, want int, gen uint64) (time.Time, error) {
	w := &waiter{match: match, want: want, gen: gen, ch: make(chan time.Time, 1)}
	t.mu.Lock()
	t.waiters = append(t.waiters, w)
	t.check(time.Now())
	t.mu.Unlock()
	select {
	case at := <-w.ch:
		return at, nil
	case <-ctx.Done():
		t.mu.Lock()
		n := 0
		for name, g := range t.applied {
			if g >= gen && match(name) {
				n++
			}
		}
		t.mu.Unlock()
		return time.Time{}, fmt.Errorf("%d of %d sinks applied generation %d: %w", n, want, gen, ctx.Err())
	}
}
