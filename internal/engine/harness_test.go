package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Kinds registered by the harness.
const (
	kindTest    = "test"    // a plain sink
	kindGateway = "gw"      // Describe().Gateway
	kindKonnect = "konnect" // defaults: GATE_ANY_GATEWAY
	kindRunner  = "runner"  // implements sink.Runner
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t     tb
	clock *clockwork.FakeClock
	reg   *sink.Registry
	fleet *enginetest.Fleet
	e     *engine.Engine
	gens  map[string]uint64
}

func newHarness(t tb, opts ...engine.Option) *harness {
	t.Helper()
	h := &harness{t: t, clock: clockwork.NewFakeClockAt(t0), reg: sink.NewRegistry(), gens: map[string]uint64{}}
	h.fleet = enginetest.NewFleet(h.clock)
	must(t, h.fleet.Register(h.reg, kindTest, sink.Capabilities{}, false))
	must(t, h.fleet.Register(h.reg, kindGateway, sink.Capabilities{Gateway: true}, false, sink.AsGateway()))
	must(t, h.fleet.Register(h.reg, kindKonnect, sink.Capabilities{}, false,
		sink.WithDefaults(&confighubv1.SinkOptions{Gate: confighubv1.Gate_GATE_ANY_GATEWAY, Timeout: durationpb.New(120 * time.Second)})))
	must(t, h.fleet.Register(h.reg, kindRunner, sink.Capabilities{Gateway: true}, true, sink.AsGateway()))
	all := append([]engine.Option{engine.WithClock(h.clock), engine.WithRandom(func() float64 { return 0.5 })}, opts...)
	h.e = engine.New(h.reg, all...)
	t.Cleanup(h.e.Stop)
	return h
}

func must(t tb, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// put adds a sink and returns its fake.
func (h *harness) put(name, kind string, o *confighubv1.SinkOptions) *enginetest.Sink {
	h.t.Helper()
	return h.putOn(name, kind, "", o)
}

func (h *harness) putOn(name, kind, stream string, o *confighubv1.SinkOptions) *enginetest.Sink {
	h.t.Helper()
	if _, _, err := h.e.PutSink(&confighubv1.Sink{Name: name, Kind: kind, Stream: stream, Options: o}); err != nil {
		h.t.Fatalf("PutSink %s: %v", name, err)
	}
	return h.fleet.Sink(name)
}

// push publishes the next generation of stream ("" = default) with content.
func (h *harness) push(stream, content string) *config.Config {
	if stream == "" {
		stream = config.DefaultStream
	}
	h.gens[stream]++
	cfg := enginetest.Config(stream, h.gens[stream], content, h.clock.Now())
	h.e.Publish(cfg)
	return cfg
}

// pushN pushes n generations with distinct content.
func (h *harness) pushN(n int) *config.Config {
	var c *config.Config
	for i := 0; i < n; i++ {
		c = h.push("", fmt.Sprintf("c-%d", h.gens[config.DefaultStream]+1))
	}
	return c
}

// await waits (woken by status events, bounded) until pred holds for the
// stream's status and returns that status.
func (h *harness) await(stream, what string, pred func(*confighubv1.GetStatusResponse) bool) *confighubv1.GetStatusResponse {
	h.t.Helper()
	if stream == "" {
		stream = config.DefaultStream
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := h.e.View().Watch(ctx, stream, 0)
	var last *confighubv1.GetStatusResponse
	for {
		if snap, ok := h.e.View().Snapshot(stream); ok {
			last = snap
			if pred(snap) {
				return snap
			}
		}
		select {
		case _, ok := <-ch:
			if !ok {
				h.t.Fatalf("watch closed while waiting for %s; last status: %v", what, last)
			}
		case <-ctx.Done():
			h.t.Fatalf("timed out waiting for %s; last status: %v", what, last)
		}
	}
}

// awaitSink waits until pred holds for one sink's status.
func (h *harness) awaitSink(name, what string, pred func(*confighubv1.SinkStatus) bool) *confighubv1.SinkStatus {
	h.t.Helper()
	stream := config.DefaultStream
	for _, s := range h.e.ListSinks("") {
		if s.GetName() == name {
			stream = s.GetStream()
		}
	}
	snap := h.await(stream, name+": "+what, func(r *confighubv1.GetStatusResponse) bool {
		st := sinkOf(r, name)
		return st != nil && pred(st)
	})
	return sinkOf(snap, name)
}

func (h *harness) awaitApplied(name string, gen uint64) *confighubv1.SinkStatus {
	h.t.Helper()
	return h.awaitSink(name, fmt.Sprintf("applied generation %d", gen), func(s *confighubv1.SinkStatus) bool {
		return s.GetAppliedGeneration() == gen && (s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED || s.GetState() == confighubv1.SinkState_SINK_STATE_SKIPPED)
	})
}

func (h *harness) awaitState(name string, st confighubv1.SinkState, gen uint64) *confighubv1.SinkStatus {
	h.t.Helper()
	return h.awaitSink(name, fmt.Sprintf("%s at generation %d", st, gen), func(s *confighubv1.SinkStatus) bool {
		return s.GetState() == st && s.GetDesiredGeneration() == gen
	})
}

// started waits for the fake's next Apply call.
func started(t tb, s *enginetest.Sink) enginetest.Call {
	t.Helper()
	select {
	case c := <-s.Started:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for an apply to start")
		return enginetest.Call{}
	}
}

// blockUntil waits until n timers are set on the fake clock.
func (h *harness) blockUntil(n int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, n); err != nil {
		h.t.Fatalf("waiting for %d timers: %v", n, err)
	}
}

func (h *harness) release(s *enginetest.Sink) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(h.t, s.Release(ctx))
}

func sinkOf(r *confighubv1.GetStatusResponse, name string) *confighubv1.SinkStatus {
	for _, s := range r.GetSinks() {
		if s.GetSink() == name {
			return s
		}
	}
	return nil
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func equalGens(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustStruct(t tb, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	must(t, err)
	return s
}

// tb is what the harness needs of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	Logf(format string, args ...any)
}
