package status

import (
	"sync"
	"sync/atomic"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Encodings shares each of the latest changes' encoding between the watchers that send it.
type Encodings[T any] struct {
	mu      sync.Mutex
	byEv    map[*confighubv1.WatchStatusResponse]*encoding[T]
	order   []*confighubv1.WatchStatusResponse // byEv's keys, oldest first
	max     int
	encodes atomic.Int64
}

type encoding[T any] struct {
	once sync.Once
	v    T
	err  error
}

// NewEncodings keeps the encodings of the latest n changes (at least 1).
func NewEncodings[T any](n int) *Encodings[T] {
	return &Encodings[T]{byEv: map[*confighubv1.WatchStatusResponse]*encoding[T]{}, max: max(n, 1)}
}

// Get returns ev's encoding, made once by encode; ev is a broker change, not a snapshot.
func (c *Encodings[T]) Get(ev *confighubv1.WatchStatusResponse, encode func() (T, error)) (T, error) {
	c.mu.Lock()
	e := c.byEv[ev]
	if e == nil {
		e = &encoding[T]{}
		c.byEv[ev] = e
		if c.order = append(c.order, ev); len(c.order) > c.max {
			delete(c.byEv, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.v, e.err = encode()
		c.encodes.Add(1)
	})
	return e.v, e.err
}

// Encodes returns how many encodings were made.
func (c *Encodings[T]) Encodes() int { return int(c.encodes.Load()) }
