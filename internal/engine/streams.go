package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/confighub/confighub/config"
)

// ErrStreamHasSinks is returned by DeleteStream while sinks read the
// stream.
var ErrStreamHasSinks = errors.New("stream has sinks")

// Held is how many streams hold a configuration (here or, on replicas,
// pushed through another replica and followed here) and how many bytes
// those configurations hold.
func (e *Engine) Held() (streams int, bytes int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.heldStreams, e.heldBytes
}

// DeleteStream forgets a stream's configuration and status. It is refused
// with ErrStreamHasSinks, saying how many, while sinks (run here or not)
// read the stream; an unknown stream is no error.
func (e *Engine) DeleteStream(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.streams[name]
	if st == nil {
		return nil
	}
	if n := len(st.sinks); n > 0 {
		return fmt.Errorf("%w: %d sink(s) read stream %q", ErrStreamHasSinks, n, name)
	}
	if st.cur != nil {
		e.heldStreams--
		e.heldBytes -= int64(len(st.cur.Raw))
	}
	delete(e.streams, name)
	delete(e.restoredConv, name)
	delete(e.conv, name)
	e.metrics.StreamDeleted(name)
	e.broker.RemoveStream(name)
	return nil
}

// SinkTotal is how many sinks the engine knows, run here or not.
func (e *Engine) SinkTotal() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.sinks)
}

// Streams returns the current configuration of every stream that holds
// one, sorted by stream name. The configurations are shared, not copied.
func (e *Engine) Streams() []*config.Config {
	e.mu.Lock()
	out := make([]*config.Config, 0, e.heldStreams)
	for _, st := range e.streams {
		if st.cur != nil {
			out = append(out, st.cur)
		}
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b *config.Config) int { return strings.Compare(a.Stream, b.Stream) })
	return out
}
