package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hub"
)

// tracker follows a stream's status through the hub's own Watch and tells
// when a set of sinks applied a generation (one wait at a time).
type tracker struct {
	mu   sync.Mutex
	view *hubclient.StatusView
	want int
	ch   chan time.Time // the wait under way, nil when none
	done chan struct{}
}

func startTracker(ctx context.Context, h *hub.Hub) *tracker {
	t := &tracker{view: hubclient.NewStatusView(0, nil), done: make(chan struct{})}
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
	t.view.Apply(ev)
	t.check(time.Now())
}

// check resolves the wait under way when its condition holds. t.mu is
// held.
func (t *tracker) check(now time.Time) {
	if applied, _, _ := t.view.Counts(); t.ch != nil && applied >= t.want {
		t.ch <- now
		t.ch = nil
	}
}

// wait returns when `want` sinks matching match applied gen (or later).
func (t *tracker) wait(ctx context.Context, match func(string) bool, want int, gen uint64) (time.Time, error) {
	ch := make(chan time.Time, 1)
	t.mu.Lock()
	t.view.Target(gen, match)
	t.want, t.ch = want, ch
	t.check(time.Now())
	t.mu.Unlock()
	select {
	case at := <-ch:
		return at, nil
	case <-ctx.Done():
		t.mu.Lock()
		defer t.mu.Unlock()
		t.ch = nil
		applied, _, _ := t.view.Counts()
		return time.Time{}, fmt.Errorf("%d of %d sinks applied generation %d: %w", applied, want, gen, ctx.Err())
	}
}
