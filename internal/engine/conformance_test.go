package engine_test

import (
	"sync"
	"testing"

	"github.com/jonboulle/clockwork"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
)

// single is the engine alone as an enginetest.Env; cluster's
// TestEngineConformance runs the same suite on replicas.
type single struct {
	e     *engine.Engine
	clock clockwork.Clock
	fleet *enginetest.Fleet
	m     *enginetest.Converged

	mu  sync.Mutex
	gen uint64
}

func (s *single) Set(name string, b enginetest.Behavior) {
	s.fleet.Preset(name, b)
	if f := s.fleet.Sink(name); f != nil {
		f.Set(b)
	}
}

func (s *single) PutSink(t *testing.T, name string, o *confighubv1.SinkOptions) {
	t.Helper()
	if _, _, err := s.e.PutSink(&confighubv1.Sink{Name: name, Kind: enginetest.Kind, Stream: "default", Options: o}); err != nil {
		t.Fatal(err)
	}
}

func (s *single) DeleteSink(t *testing.T, name string) {
	t.Helper()
	if err := s.e.DeleteSink(name); err != nil {
		t.Fatal(err)
	}
}

func (s *single) Push(_ *testing.T, content string) uint64 {
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.mu.Unlock()
	s.e.Publish(enginetest.Config("default", gen, content, s.clock.Now()))
	return gen
}

func (s *single) View() status.View        { return s.e.View() }
func (s *single) Converged(gen uint64) int { return s.m.Count(gen) }

// TestEngineConformance runs the engine conformance suite on one engine
// (a fake clock: nothing in the suite waits for time to pass).
func TestEngineConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Env {
		clock := clockwork.NewFakeClockAt(t0)
		fleet := enginetest.NewFleet(clock)
		reg := sink.NewRegistry()
		must(t, fleet.Register(reg, enginetest.Kind, sink.Capabilities{}, false))
		m := &enginetest.Converged{}
		e := engine.New(reg, engine.WithClock(clock), engine.WithMetrics(m))
		t.Cleanup(e.Stop)
		return &single{e: e, clock: clock, fleet: fleet, m: m}
	})
}
