package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
)

type nopSink struct{}

func (nopSink) Apply(context.Context, *config.Config) error { return nil }
func (nopSink) Describe() Capabilities                      { return Capabilities{} }

func nopFactory(*confighubv1.Sink, Deps) (Sink, error) { return nopSink{}, nil }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("b", nopFactory); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("a", nopFactory, WithDefaults(&confighubv1.SinkOptions{Wave: 2})); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("a", nopFactory); err == nil {
		t.Fatal("a kind registered twice must fail")
	}
	if err := r.Register("", nopFactory); err == nil {
		t.Fatal("an empty kind must fail")
	}
	if got := r.Kinds(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("kinds %v", got)
	}
	k, ok := r.Lookup("a")
	if !ok || k.Defaults.GetWave() != 2 {
		t.Fatalf("lookup a: %+v %v", k, ok)
	}
	if _, ok := r.Lookup("c"); ok {
		t.Fatal("lookup of an unregistered kind succeeded")
	}
}

func TestKindOf(t *testing.T) {
	r := NewRegistry()
	noop := func(*confighubv1.Sink, Deps) (Sink, error) { return nil, nil }
	for name, owns := range map[string]func(*confighubv1.Sink) bool{
		"kong":    func(s *confighubv1.Sink) bool { return s.GetKong() != nil },
		"kong-db": func(s *confighubv1.Sink) bool { return s.GetKongDb() != nil },
		"konnect": func(s *confighubv1.Sink) bool { return s.GetKonnect() != nil },
		"file":    func(s *confighubv1.Sink) bool { return s.GetFile() != nil },
	} {
		if err := r.Register(name, noop, WithSpec(owns)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		s    *confighubv1.Sink
		want string
	}{
		{&confighubv1.Sink{Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{}}}, "kong"},
		{&confighubv1.Sink{Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{}}}, "kong-db"},
		{&confighubv1.Sink{Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{}}}, "konnect"},
		{&confighubv1.Sink{Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{}}}, "file"},
		{&confighubv1.Sink{Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{}}}, ""}, // no kind owns it here
		{&confighubv1.Sink{Kind: "log"}, "log"},
		{&confighubv1.Sink{}, ""},
	}
	for _, c := range cases {
		if got := r.KindOf(c.s); got != c.want {
			t.Errorf("KindOf(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestErrorIsFoundInChain(t *testing.T) {
	base := errors.New("HTTP 400")
	err := fmt.Errorf("apply: %w", Permanent("rejected", base))
	e, ok := AsError(err)
	if !ok || !e.Permanent || e.Code != "rejected" || !errors.Is(err, base) {
		t.Fatalf("AsError: %+v %v", e, ok)
	}
	if err.Error() != "apply: rejected: HTTP 400" {
		t.Fatalf("message %q", err.Error())
	}
	ra, _ := AsError(RetryAfter(3*time.Second, base))
	if ra.RetryAfter != 3*time.Second || ra.Permanent {
		t.Fatalf("RetryAfter: %+v", ra)
	}
	if _, ok := AsError(base); ok {
		t.Fatal("a plain error is not a *sink.Error")
	}
}
