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

// held counts the streams that hold a configuration and the bytes of
// their configurations (Raw, as pushed). Guarded by Engine.mu; kept as
// generations come and streams go, so Held costs the same however many
// streams there are.
type held struct {
	streams int
	bytes   int64
}

// replace accounts for a stream whose configuration goes from prev (nil:
// none) to cur (nil: deleted).
func (h *held) replace(prev, cur *config.Config) {
	switch {
	case prev == nil && cur != nil:
		h.streams++
	case prev != nil && cur == nil:
		h.streams--
	}
	if prev != nil {
		h.bytes -= int64(len(prev.Raw))
	}
	if cur != nil {
		h.bytes += int64(len(cur.Raw))
	}
}

// Held is how many streams hold a configuration (here or, on replicas,
// pushed through another replica and followed here) and how many bytes
// those configurations hold.
func (e *Engine) Held() (streams int, bytes int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held.streams, e.held.bytes
}

// DeleteStream forgets a stream's configuration and status. It is
// refused with ErrStreamHasSinks, naming them, while sinks (run here or
// not) read the stream, saying how many; a stream the engine does not know is no error.
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
	e.held.replace(st.cur, nil)
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
	out := make([]*config.Config, 0, e.held.streams)
	for _, st := range e.streams {
		if st.cur != nil {
			out = append(out, st.cur)
		}
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b *config.Config) int { return strings.Compare(a.Stream, b.Stream) })
	return out
}
