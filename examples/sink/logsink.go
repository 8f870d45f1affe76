package logsink

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Kind is the name the sink is registered under.
const Kind = "log"

// Register adds the "log" kind to r, writing to w (os.Stdout when nil).
func Register(r *sink.Registry, w io.Writer) error {
	if w == nil {
		w = os.Stdout
	}
	// One lock per writer: the engine never calls Apply concurrently for
	// one sink, but the sinks of this kind share w.
	mu := &sync.Mutex{}
	return r.Register(Kind, func(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
		return New(spec, w, mu)
	})
}

// Sink writes a line per configuration.
type Sink struct {
	name   string
	prefix string
	mu     *sync.Mutex // guards w, shared with the other sinks on w
	w      io.Writer
}

// The compile-time check that Sink is a sink.Sink.
var _ sink.Sink = (*Sink)(nil)

// New builds a sink from its spec. The settings live in the spec's custom
// struct; an unknown setting is an error so a typo is caught on PutSink.
// mu guards w.
func New(spec *confighubv1.Sink, w io.Writer, mu *sync.Mutex) (*Sink, error) {
	s := &Sink{name: spec.GetName(), w: w, mu: mu}
	for k, v := range spec.GetCustom().GetFields() {
		switch k {
		case "prefix":
			s.prefix = v.GetStringValue()
		default:
			return nil, fmt.Errorf("%w: sink %q: unknown setting %q (the log kind takes: prefix)", sink.ErrInvalidSpec, spec.GetName(), k)
		}
	}
	return s, nil
}

// Describe: a log line works for any format and size.
func (s *Sink) Describe() sink.Capabilities { return sink.Capabilities{} }

// Apply writes the line. A write error is returned as is: the engine
// retries it with backoff.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := fmt.Fprintf(s.w, "%ssink=%s stream=%s generation=%d hash=%s format=%s bytes=%d\n",
		s.prefix, s.name, cfg.Stream, cfg.Generation, cfg.Hash, cfg.Format, cfg.Size())
	if err != nil {
		return fmt.Errorf("log sink %s: write: %w", s.name, err)
	}
	return nil
}
