package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// benchKind is an in-process sink kind for the harness: each apply takes
// delay (real time; the harness measures wall-clock behaviour), or hangs
// until its attempt is cancelled. gateway makes it count for
// GATE_ANY_GATEWAY.
const benchKind = "bench"

// applyLog records what every bench sink did.
type applyLog struct {
	mu      sync.Mutex
	applies map[string]int
	started map[string]map[uint64]time.Time
	done    map[string]map[uint64]time.Time
	notify  chan struct{}
}

func newApplyLog() *applyLog {
	return &applyLog{applies: map[string]int{}, started: map[string]map[uint64]time.Time{}, done: map[string]map[uint64]time.Time{}, notify: make(chan struct{}, 1)}
}

func (l *applyLog) mark(m map[string]map[uint64]time.Time, name string, gen uint64, t time.Time) {
	g := m[name]
	if g == nil {
		g = map[uint64]time.Time{}
		m[name] = g
	}
	g[gen] = t
}

func (l *applyLog) start(name string, gen uint64) {
	l.mu.Lock()
	l.mark(l.started, name, gen, time.Now())
	l.mu.Unlock()
}

func (l *applyLog) finish(name string, gen uint64) {
	l.mu.Lock()
	l.applies[name]++
	l.mark(l.done, name, gen, time.Now())
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

// times returns when name started and finished gen (zero when not).
func (l *applyLog) times(name string, gen uint64) (start, done time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started[name][gen], l.done[name][gen]
}

func (l *applyLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applies[name]
}

// waitDone waits until name finished gen.
func (l *applyLog) waitDone(ctx context.Context, name string, gen uint64) (time.Time, error) {
	for {
		if _, d := l.times(name, gen); !d.IsZero() {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("sink %s did not apply generation %d: %w", name, gen, ctx.Err())
		case <-l.notify:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

type benchSink struct {
	name    string
	delay   time.Duration
	hang    bool
	gateway bool
	// failBytes > 0: every apply is rejected (permanently) with a message
	// of that size, as a gateway with many entity errors answers.
	failBytes int
	log       *applyLog
}

func (s *benchSink) Describe() sink.Capabilities { return sink.Capabilities{Gateway: s.gateway} }

func (s *benchSink) Apply(ctx context.Context, cfg *config.Config) error {
	s.log.start(s.name, cfg.Generation)
	if s.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if s.failBytes > 0 {
		return sink.Permanent("rejected", errors.New(strings.Repeat("x", s.failBytes)))
	}
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	s.log.finish(s.name, cfg.Generation)
	return nil
}

func registerBench(reg *sink.Registry, log *applyLog) error {
	return reg.Register(benchKind, func(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
		f := spec.GetCustom().GetFields()
		return &benchSink{
			name:      spec.GetName(),
			delay:     time.Duration(f["delay_ms"].GetNumberValue() * float64(time.Millisecond)),
			hang:      f["hang"].GetBoolValue(),
			gateway:   f["gateway"].GetBoolValue(),
			failBytes: int(f["fail_bytes"].GetNumberValue()),
			log:       log,
		}, nil
	})
}

// benchSpec is a bench sink's spec.
func benchSpec(name string, delay time.Duration, hang, gateway bool, o *confighubv1.SinkOptions) *confighubv1.Sink {
	st, err := structpb.NewStruct(map[string]any{"delay_ms": float64(delay) / float64(time.Millisecond), "hang": hang, "gateway": gateway})
	if err != nil {
		panic(err)
	}
	if o == nil {
		o = &confighubv1.SinkOptions{}
	}
	if o.Timeout == nil {
		o.Timeout = durationpb.New(10 * time.Minute)
	}
	return &confighubv1.Sink{Name: name, Kind: benchKind, Options: o, Spec: &confighubv1.Sink_Custom{Custom: st}}
}
