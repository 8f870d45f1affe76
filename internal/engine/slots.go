package engine

import "slices"

// slotPool limits applies in flight (Engine.mu); a release wakes the first queued worker only.
type slotPool struct {
	name  string
	max   int
	free  int
	queue []*worker // FIFO
}

func newSlotPool(name string, n int) *slotPool {
	return &slotPool{name: name, max: n, free: n}
}

// acquire gives w a slot (a nil pool always), or queues it and returns false. e.mu is held.
func (p *slotPool) acquire(w *worker) bool {
	if p == nil || w.slotHeld {
		return true
	}
	if w.slotQueued {
		return false
	}
	if p.free > 0 && len(p.queue) == 0 {
		p.free--
		w.slotHeld = true
		return true
	}
	w.slotQueued = true
	p.queue = append(p.queue, w)
	return false
}

// release gives up w's slot or queue place, returning the worker to wake.
func (p *slotPool) release(w *worker) (wake *worker) {
	switch {
	case p == nil:
	case w.slotHeld && len(p.queue) == 0:
		w.slotHeld = false
		p.free++
	case w.slotHeld:
		w.slotHeld = false
		next := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:] // append reallocates from the live part
		next.slotQueued, next.slotHeld = false, true
		return next
	case w.slotQueued:
		w.slotQueued = false
		p.queue = slices.DeleteFunc(p.queue, func(q *worker) bool { return q == w })
	}
	return nil
}
