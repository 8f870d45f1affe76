package engine

import (
	"fmt"
	"testing"
)

// TestSlotPool: the apply-slot pool's decisions. A free slot is taken at
// once unless others wait; a worker queues once; a release hands the slot
// to the first queued worker (named to be woken, in arrival order) or
// returns it; a queued worker that leaves gives up its place; the queue's
// consumed front is dropped so it does not grow for ever.
func TestSlotPool(t *testing.T) {
	ws := make([]*worker, 5)
	for i := range ws {
		ws[i] = &worker{member: &member{name: fmt.Sprintf("w%d", i)}}
	}
	name := func(w *worker) string {
		if w == nil {
			return "-"
		}
		return w.name
	}
	p := newSlotPool("gateway", 2)
	steps := []struct {
		do   string // "acquire", "release"
		w    int
		want string // acquire: "true"/"false"; release: the worker to wake or "-"
	}{
		{"acquire", 0, "true"},
		{"acquire", 0, "true"}, // held already
		{"acquire", 1, "true"},
		{"acquire", 2, "false"}, // full: queued
		{"acquire", 2, "false"}, // queued once
		{"acquire", 3, "false"},
		{"acquire", 4, "false"},
		{"release", 3, "-"},  // leaves the queue
		{"release", 0, "w2"}, // first queued
		{"release", 1, "w4"},
		{"acquire", 0, "false"}, // no slot free (w2 and w4 hold them): queued
		{"release", 2, "w0"},
		{"release", 4, "-"}, // nobody waits: the slot is free again
		{"acquire", 1, "true"},
		{"release", 0, "-"},
		{"release", 1, "-"},
		{"release", 1, "-"}, // neither held nor queued
	}
	for i, s := range steps {
		var got string
		switch s.do {
		case "acquire":
			got = fmt.Sprint(p.acquire(ws[s.w]))
		case "release":
			got = name(p.release(ws[s.w]))
		}
		if got != s.want {
			t.Fatalf("step %d: %s %s = %s, want %s", i, s.do, ws[s.w].name, got, s.want)
		}
	}
	if p.free != 2 || len(p.queue) != 0 {
		t.Fatalf("after every release: free %d, queue %d", p.free, len(p.queue))
	}
	for _, w := range ws {
		if w.slotHeld || w.slotQueued {
			t.Fatalf("%s still held %v queued %v", w.name, w.slotHeld, w.slotQueued)
		}
	}

	// A long queue served in order keeps its backing array bounded.
	p = newSlotPool("non-gateway", 1)
	holder := &worker{member: &member{name: "holder"}}
	p.acquire(holder)
	many := make([]*worker, 1000)
	for i := range many {
		many[i] = &worker{member: &member{name: fmt.Sprintf("q%d", i)}}
		p.acquire(many[i])
	}
	cur := holder
	for i := range many {
		next := p.release(cur)
		if next != many[i] {
			t.Fatalf("hand-over %d went to %s, want %s", i, name(next), many[i].name)
		}
		cur = next
	}
	if p.release(cur) != nil || p.free != 1 {
		t.Fatalf("the last release: free %d", p.free)
	}
	// A queue that keeps a few waiting while thousands pass through keeps
	// its backing array small: the served front is not kept.
	p.acquire(holder)
	for _, w := range many[:8] {
		p.acquire(w)
	}
	cur = holder
	for i := range 10000 {
		next := p.release(cur)
		if next == nil || cap(p.queue) > 64 {
			t.Fatalf("pass %d: next %s, queue capacity %d", i, name(next), cap(p.queue))
		}
		p.acquire(cur) // queues again at the back
		cur = next
	}
}
