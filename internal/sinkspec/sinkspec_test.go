package sinkspec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/sink"
)

func checker(t *testing.T) *Checker {
	t.Helper()
	reg := sink.NewRegistry()
	if err := builtin.Register(reg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return New(reg)
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func fileSink(name string, o *confighubv1.SinkOptions) *confighubv1.Sink {
	return &confighubv1.Sink{Name: name, Options: o, Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "out/x.json"}}}
}

func wantInvalid(t *testing.T, c *Checker, s *confighubv1.Sink, is error, msg string) {
	t.Helper()
	_, _, err := c.Normalise(s)
	if !errors.Is(err, is) || !strings.Contains(err.Error(), msg) {
		t.Errorf("Normalise(%v) = %v; want %v mentioning %q", s, err, is, msg)
	}
}

// TestProtoRulesEnforced: each range and pattern is written once, in
// sink.proto, and Normalise enforces it (no second copy in Go).
func TestProtoRulesEnforced(t *testing.T) {
	c := checker(t)
	for _, tc := range []struct {
		s   *confighubv1.Sink
		msg string
	}{
		{fileSink("-x", nil), "name"},
		{fileSink(strings.Repeat("a", 129), nil), "name"},
		{&confighubv1.Sink{Name: "x", Stream: "Bad", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "x"}}}, "stream"},
		{fileSink("x", &confighubv1.SinkOptions{Timeout: dur(0)}), "options.timeout"},
		{fileSink("x", &confighubv1.SinkOptions{Wave: 101}), "options.wave"},
		{fileSink("x", &confighubv1.SinkOptions{Gate: 99}), "options.gate"},
		{fileSink("x", &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Multiplier: 0.5}}), "multiplier"},
		{fileSink("x", &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Jitter: 1.5}}), "jitter"},
		{fileSink("x", &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Initial: dur(0)}}), "backoff.initial"},
		{&confighubv1.Sink{Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{}}}, "file.path"},
		{&confighubv1.Sink{Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "x", Format: 9}}}, "file.format"},
		{&confighubv1.Sink{Name: "p", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{}}}, "plugin.address"},
		{&confighubv1.Sink{Name: "d", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{}}}, "kong_db.address"},
		{&confighubv1.Sink{Name: "g", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "http://h", StatusInterval: dur(-time.Second)}}}, "kong.status_interval"},
	} {
		wantInvalid(t, c, tc.s, sink.ErrInvalidSpec, tc.msg)
	}
}

// TestAddressWithoutCredentials: an address with user:password@ is
// refused without quoting it (the password would show wherever the
// address does: ListSinks, logs, status); credentials go in the fields
// marked secret.
func TestAddressWithoutCredentials(t *testing.T) {
	c := checker(t)
	const u = "http://admin:hunter2@127.0.0.1:8001"
	for _, s := range []*confighubv1.Sink{
		{Name: "k", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: u}}},
		{Name: "d", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{Address: u}}},
		{Name: "c", Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{Address: u, ControlPlaneId: "cp", Token: "t"}}},
	} {
		_, _, err := c.Normalise(s)
		if !errors.Is(err, sink.ErrInvalidSpec) || !strings.Contains(err.Error(), "carries credentials") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want ErrInvalidSpec saying it carries credentials, without them", s.GetName(), err)
		}
	}
	ok := &confighubv1.Sink{Name: "k", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "http://127.0.0.1:8001/path@x"}}}
	if _, _, err := c.Normalise(ok); err != nil {
		t.Errorf("an @ after the host: %v", err)
	}
}

// TestCrossFieldRules: the rules across fields, which protovalidate's field
// rules do not state.
func TestCrossFieldRules(t *testing.T) {
	c := checker(t)
	wantInvalid(t, c, fileSink("x", &confighubv1.SinkOptions{MaxDelay: dur(time.Second)}), sink.ErrInvalidSpec, "max_delay needs")
	wantInvalid(t, c, fileSink("x", &confighubv1.SinkOptions{Debounce: dur(time.Minute), MaxDelay: dur(time.Second)}), sink.ErrInvalidSpec, "at least options.debounce")
	wantInvalid(t, c, fileSink("x", &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Initial: dur(time.Minute), Max: dur(time.Second)}}), sink.ErrInvalidSpec, "backoff.max")
	if _, _, err := c.Normalise(fileSink("x", &confighubv1.SinkOptions{Debounce: dur(time.Second), MaxDelay: dur(time.Second)})); err != nil {
		t.Errorf("max_delay equal to debounce: %v", err)
	}
}

// TestKindDefaults: the kind's defaults (registered by the kind) fill only
// unset options, then the engine defaults; the input is left alone.
func TestKindDefaults(t *testing.T) {
	c := checker(t)
	in := &confighubv1.Sink{Name: "k", Options: &confighubv1.SinkOptions{Timeout: dur(time.Minute)},
		Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{Address: "https://eu.api.konghq.com", ControlPlaneId: "cp", Token: "t"}}}
	before := proto.Clone(in)
	norm, _, err := c.Normalise(in)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, before) {
		t.Fatal("Normalise changed its input")
	}
	o := norm.GetOptions()
	if norm.GetKind() != "konnect" || norm.GetStream() != "default" || o.GetTimeout().AsDuration() != time.Minute ||
		o.GetMinInterval() == nil || o.GetGate() != confighubv1.Gate_GATE_ANY_GATEWAY {
		t.Fatalf("normalised %v", norm)
	}
	r, err := Resolve(norm)
	if err != nil || r.Backoff.Initial != DefaultBackoffInitial || r.Backoff.Multiplier != DefaultBackoffMultiplier || r.Timeout != time.Minute {
		t.Fatalf("resolved %+v %v", r, err)
	}
	// A file sink has no kind defaults: the engine's gate is the wave gate.
	norm, _, err = c.Normalise(fileSink("f", nil))
	if r, _ := Resolve(norm); err != nil || r.Gate != confighubv1.Gate_GATE_WAVE || r.Timeout != DefaultTimeout {
		t.Fatalf("file sink resolved %+v %v", r, err)
	}
}

// TestKindResolution: the kind comes from the kind field or from the kind
// that registered the spec that is set.
func TestKindResolution(t *testing.T) {
	c := checker(t)
	for spec, want := range map[*confighubv1.Sink]string{
		fileSink("f", nil): "file",
		{Name: "g", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "http://127.0.0.1:8001"}}}:       "kong",
		{Name: "d", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{Address: "http://127.0.0.1:8001"}}}: "kong-db",
		{Name: "p", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: "127.0.0.1:9000"}}}:        "plugin",
	} {
		norm, _, err := c.Normalise(spec)
		if err != nil || norm.GetKind() != want {
			t.Errorf("%v: kind %q %v, want %q", spec, norm.GetKind(), err, want)
		}
	}
	wantInvalid(t, c, &confighubv1.Sink{Name: "x", Kind: "kong", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "x"}}}, sink.ErrInvalidSpec, "file spec")
	wantInvalid(t, c, &confighubv1.Sink{Name: "x", Kind: "nope"}, sink.ErrUnknownKind, `"nope"`)
	for _, kind := range []string{"kong", "kong-db", "konnect", "file", "plugin"} {
		wantInvalid(t, c, &confighubv1.Sink{Name: "x", Kind: kind}, sink.ErrInvalidSpec, "no spec of its kind")
	}
	wantInvalid(t, c, &confighubv1.Sink{Name: "x"}, sink.ErrInvalidSpec, "neither a kind nor a spec")
	wantInvalid(t, c, &confighubv1.Sink{Kind: "file"}, sink.ErrInvalidSpec, "name is required")
}

// TestBackoffDelay: exponential growth, the cap, and jitter spreading each
// delay within ±jitter (never above the cap).
func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 10 * time.Second, Multiplier: 2, Jitter: 0.2}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		if got := b.Delay(n, 0.5); got != want {
			t.Errorf("Delay(%d) = %s, want %s", n, got, want)
		}
	}
	if lo, hi := b.Delay(2, 0), b.Delay(2, 0.999999); lo != 1600*time.Millisecond || hi < 2399*time.Millisecond || hi > 2400*time.Millisecond {
		t.Errorf("jitter spread of 2s: [%s, %s], want [1.6s, 2.4s]", lo, hi)
	}
	if hi := b.Delay(10, 0.999999); hi != 10*time.Second {
		t.Errorf("jitter above the cap: %s", hi)
	}
}
