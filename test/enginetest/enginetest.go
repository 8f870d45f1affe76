package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/sink"
)

// Behavior is what a fake sink does on its next applies.
type Behavior struct {
	// Delay makes Apply take this long on the sink's clock.
	Delay time.Duration
	// Hang makes Apply block until its context ends.
	Hang bool
	// Block makes Apply wait for Release (or its context).
	Block bool
	// IgnoreContext makes a blocked Apply wait for Release only, as a sink
	// that breaks the contract of returning once its context ends.
	IgnoreContext bool
	// Err is returned by Apply (after Delay).
	Err error
	// Panic makes Apply panic with this value.
	Panic any
}

// Call is one Apply as the fake saw it start.
type Call struct {
	Sink       string
	Generation uint64
	Hash       string
}

// Sink is a fake sink. Its methods are safe for concurrent use.
type Sink struct {
	name  string
	clock clockwork.Clock
	caps  sink.Capabilities

	// Started receives every Apply call after its delay timer is set (so a
	// test that got a Call may Advance the clock past it). Buffered; calls
	// beyond its buffer are not reported.
	Started chan Call

	release chan struct{}
	fleet   *Fleet
	free    chan struct{} // closed by ReleaseAll

	mu         sync.Mutex
	behavior   Behavior
	applied    []uint64
	calls      int
	inFlight   int
	maxFlight  int
	outOfOrder bool
	closed     bool
}

var (
	_ sink.Sink   = (*Sink)(nil)
	_ sink.Closer = (*Sink)(nil)
)

// NewSink returns a fake sink.
func NewSink(name string, clock clockwork.Clock, caps sink.Capabilities) *Sink {
	return &Sink{name: name, clock: clock, caps: caps, Started: make(chan Call, 4096), release: make(chan struct{}), free: make(chan struct{})}
}

// Set replaces the sink's behaviour for the next applies.
func (s *Sink) Set(b Behavior) {
	s.mu.Lock()
	s.behavior = b
	s.mu.Unlock()
}

// Release lets one blocked Apply return; it waits until one takes it or
// ctx ends.
func (s *Sink) Release(ctx context.Context) error {
	select {
	case s.release <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ReleaseAll lets every Apply blocked now return (use Set first so the next
// ones do not block).
func (s *Sink) ReleaseAll() {
	s.mu.Lock()
	close(s.free)
	s.free = make(chan struct{})
	s.mu.Unlock()
}

// Describe implements sink.Sink.
func (s *Sink) Describe() sink.Capabilities { return s.caps }

// Apply implements sink.Sink.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	s.mu.Lock()
	b := s.behavior
	free := s.free
	s.calls++
	s.inFlight++
	s.maxFlight = max(s.maxFlight, s.inFlight)
	s.mu.Unlock()
	if s.fleet != nil {
		s.fleet.enter()
		defer s.fleet.exit()
	}
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	call := Call{Sink: s.name, Generation: cfg.Generation, Hash: cfg.Hash}
	var timer <-chan time.Time
	if b.Delay > 0 {
		t := s.clock.NewTimer(b.Delay)
		defer t.Stop()
		timer = t.Chan()
	}
	select {
	case s.Started <- call:
	default:
	}
	if b.Panic != nil {
		panic(b.Panic)
	}
	if b.Hang {
		<-ctx.Done()
		return fmt.Errorf("hung sink %s: %w", s.name, ctx.Err())
	}
	if b.Block {
		done := ctx.Done()
		if b.IgnoreContext {
			done = nil
		}
		select {
		case <-s.release:
		case <-free:
		case <-done:
			return fmt.Errorf("blocked sink %s: %w", s.name, ctx.Err())
		}
	}
	if timer != nil {
		select {
		case <-timer:
		case <-ctx.Done():
			return fmt.Errorf("slow sink %s: %w", s.name, ctx.Err())
		}
	}
	if b.Err != nil {
		return b.Err
	}
	s.mu.Lock()
	if n := len(s.applied); n > 0 && s.applied[n-1] >= cfg.Generation {
		s.outOfOrder = true
	}
	// Keep the history bounded: tests look at the order and the tail.
	if len(s.applied) >= 1<<16 {
		s.applied = append(s.applied[:0], s.applied[len(s.applied)-1])
	}
	s.applied = append(s.applied, cfg.Generation)
	s.mu.Unlock()
	return nil
}

// Close implements sink.Closer.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("closed twice")
	}
	s.closed = true
	return nil
}

// Applied returns the generations applied successfully, in order.
func (s *Sink) Applied() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.applied...)
}

// Calls returns the number of Apply calls.
func (s *Sink) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// MaxInFlight returns the largest number of concurrent Apply calls seen.
func (s *Sink) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxFlight
}

// OutOfOrder reports whether a generation was applied after a newer or
// equal one.
func (s *Sink) OutOfOrder() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outOfOrder
}

// Closed reports whether Close was called.
func (s *Sink) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// RunnerSink is a fake sink with a background loop: it hands its Notifier
// to the test.
type RunnerSink struct {
	*Sink
	running chan sink.Notifier
}

var _ sink.Runner = (*RunnerSink)(nil)

// Run implements sink.Runner: it publishes the notifier and waits for ctx.
func (r *RunnerSink) Run(ctx context.Context, n sink.Notifier) {
	select {
	case r.running <- n:
	case <-ctx.Done():
	}
	<-ctx.Done()
}

// Notifier waits until Run started and returns its notifier.
func (r *RunnerSink) Notifier(ctx context.Context) (sink.Notifier, error) {
	select {
	case n := <-r.running:
		return n, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Fleet builds fake sinks for a registered kind and keeps the newest one
// per sink name.
type Fleet struct {
	clock  clockwork.Clock
	mu     sync.Mutex
	sinks  map[string]*Sink
	runner map[string]*RunnerSink
	preset map[string]Behavior
	builds int
	// applies in flight across the fleet
	inFlight, maxInFlight int
}

func (f *Fleet) enter() {
	f.mu.Lock()
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
}

func (f *Fleet) exit() {
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
}

// MaxInFlight returns the largest number of applies in flight at once across
// the fleet.
func (f *Fleet) MaxInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight
}

// NewFleet returns an empty fleet whose sinks use clock.
func NewFleet(clock clockwork.Clock) *Fleet {
	return &Fleet{clock: clock, sinks: map[string]*Sink{}, runner: map[string]*RunnerSink{}, preset: map[string]Behavior{}}
}

// Register adds kind to reg. caps are the sinks' capabilities; with runner
// the sinks implement sink.Runner. Extra options (defaults, validation) are
// passed on.
func (f *Fleet) Register(reg *sink.Registry, kind string, caps sink.Capabilities, runner bool, opts ...sink.RegisterOption) error {
	return reg.Register(kind, func(spec *confighubv1.Sink, deps sink.Deps) (sink.Sink, error) {
		if spec.GetCustom().GetFields()["invalid"] != nil {
			return nil, fmt.Errorf("%w: custom.invalid is set", sink.ErrInvalidSpec)
		}
		s := NewSink(spec.GetName(), f.clock, caps)
		s.fleet = f
		f.mu.Lock()
		defer f.mu.Unlock()
		f.builds++
		if b, ok := f.preset[spec.GetName()]; ok {
			s.behavior = b
		}
		f.sinks[spec.GetName()] = s
		if runner {
			r := &RunnerSink{Sink: s, running: make(chan sink.Notifier, 1)}
			f.runner[spec.GetName()] = r
			return r, nil
		}
		return s, nil
	}, opts...)
}

// Preset sets the behaviour a sink of that name gets when it is built.
func (f *Fleet) Preset(name string, b Behavior) {
	f.mu.Lock()
	f.preset[name] = b
	f.mu.Unlock()
}

// Sink returns the newest fake built for name (nil if none).
func (f *Fleet) Sink(name string) *Sink {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sinks[name]
}

// Runner returns the newest runner fake built for name (nil if none).
func (f *Fleet) Runner(name string) *RunnerSink {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runner[name]
}

// Builds returns how many sinks the factory built.
func (f *Fleet) Builds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.builds
}

// Config returns a config of stream at gen whose bytes (and hash) are
// derived from content.
func Config(stream string, gen uint64, content string, accepted time.Time) *config.Config {
	raw := []byte(fmt.Sprintf(`{"_format_version":"3.0","content":%q}`, content))
	return config.New(stream, gen, config.Hash(raw), config.FormatJSON, raw, nil, nil, accepted)
}

// Converged is an engine.Metrics that counts StreamConverged per
// generation (what the convergence histogram observes); the rest is
// discarded.
type Converged struct {
	engine.NopMetrics
	mu sync.Mutex
	n  map[uint64]int
}

// Count is how many times generation gen was observed converged.
func (c *Converged) Count(gen uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[gen]
}

// StreamConverged implements engine.Metrics.
func (c *Converged) StreamConverged(_ string, gen uint64, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[uint64]int{}
	}
	c.n[gen]++
}
