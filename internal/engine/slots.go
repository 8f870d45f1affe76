package engine

// slotPool is one hub-wide limit of applies in flight, guarded by
// Engine.mu. A worker that finds it full joins a FIFO queue and sleeps; a
// release hands the slot to the first queued worker, which its releaser
// wakes: each freed slot wakes one worker, not every waiter (TestSlotPool).
type slotPool struct {
	name  string
	max   int
	free  int
	queue []*worker
	head  int
}

func newSlotPool(name string, n int) *slotPool {
	return &slotPool{name: name, max: n, free: n}
}

// acquire gives w a slot, or queues it (once) and returns false; w is
// woken when a release hands it a slot. A nil pool (a sink whose applies
// take no slot) always gives one. e.mu is held.
func (p *slotPool) acquire(w *worker) bool {
	if p == nil || w.slotHeld {
		return true
	}
	if w.slotQueued {
		return false
	}
	if p.free > 0 && p.waiting() == 0 {
		p.free--
		w.slotHeld = true
		return true
	}
	w.slotQueued = true
	p.queue = append(p.queue, w)
	return false
}

// waiting is the number of queued workers. e.mu is held.
func (p *slotPool) waiting() int { return len(p.queue) - p.head }

// release gives up w's slot, or takes w out of the queue. A freed slot
// goes to the first queued worker, returned to be woken. e.mu is held.
func (p *slotPool) release(w *worker) (wake *worker) {
	if p == nil {
		return nil
	}
	switch {
	case w.slotHeld:
		w.slotHeld = false
		return p.handOver()
	case w.slotQueued:
		w.slotQueued = false
		for i := p.head; i < len(p.queue); i++ {
			if p.queue[i] == w {
				p.queue = append(p.queue[:i], p.queue[i+1:]...)
				break
			}
		}
		p.compact()
	}
	return nil
}

// handOver gives a free slot to the first queued worker, returned to be
// woken, or returns it to the pool. e.mu is held.
func (p *slotPool) handOver() *worker {
	if p.waiting() == 0 {
		p.free++
		return nil
	}
	next := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	p.compact()
	next.slotQueued = false
	next.slotHeld = true
	return next
}

// compact drops the consumed front of the queue once it is most of it, so
// the backing array does not grow for ever. e.mu is held.
func (p *slotPool) compact() {
	if p.head == len(p.queue) {
		clear(p.queue)
		p.queue, p.head = p.queue[:0], 0
		return
	}
	if p.head > 64 && p.head*2 > len(p.queue) {
		n := copy(p.queue, p.queue[p.head:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
}
