package logsink_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	logsink "github.com/confighub/confighub/examples/sink"
	"github.com/confighub/confighub/sink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func build(t *testing.T, r *sink.Registry, spec *confighubv1.Sink) (sink.Sink, error) {
	t.Helper()
	k, ok := r.Lookup(r.KindOf(spec))
	if !ok {
		t.Fatalf("kind %q not registered", r.KindOf(spec))
	}
	return k.Factory(spec, sink.Deps{})
}

func TestLogSinkWritesOneLinePerApply(t *testing.T) {
	var out bytes.Buffer
	r := sink.NewRegistry()
	if err := logsink.Register(r, &out); err != nil {
		t.Fatal(err)
	}
	custom, _ := structpb.NewStruct(map[string]any{"prefix": "[audit] "})
	s, err := build(t, r, &confighubv1.Sink{Name: "audit", Kind: "log", Spec: &confighubv1.Sink_Custom{Custom: custom}})
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"_format_version":"3.0"}`)
	for gen := uint64(1); gen <= 2; gen++ {
		cfg := config.New("default", gen, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Unix(0, 0))
		if err := s.Apply(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), out.String())
	}
	want := fmt.Sprintf("[audit] sink=audit stream=default generation=2 hash=%s format=json bytes=%d", config.Hash(raw), len(raw))
	if lines[1] != want {
		t.Fatalf("line %q, want %q", lines[1], want)
	}
}

func TestLogSinkRejectsUnknownSetting(t *testing.T) {
	r := sink.NewRegistry()
	if err := logsink.Register(r, nil); err != nil {
		t.Fatal(err)
	}
	custom, _ := structpb.NewStruct(map[string]any{"prefx": "typo"})
	_, err := build(t, r, &confighubv1.Sink{Name: "audit", Kind: "log", Spec: &confighubv1.Sink_Custom{Custom: custom}})
	if !errors.Is(err, sink.ErrInvalidSpec) || !strings.Contains(err.Error(), "prefx") {
		t.Fatalf("want ErrInvalidSpec naming the setting, got %v", err)
	}
}

// Example shows how a hub binary registers the kind next to the built-in
// ones; the engine then builds a sink for every spec of kind "log".
func Example() {
	r := sink.NewRegistry()
	if err := logsink.Register(r, os.Stdout); err != nil {
		panic(err)
	}
	k, _ := r.Lookup("log")
	s, err := k.Factory(&confighubv1.Sink{Name: "audit", Kind: "log"}, sink.Deps{})
	if err != nil {
		panic(err)
	}
	raw := []byte(`{"_format_version":"3.0"}`)
	_ = s.Apply(context.Background(), config.New("default", 1, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Time{}))
	// Output: sink=audit stream=default generation=1 hash=6c263ad65bfc3c15634122bdbefdf378f0de46392965abba647d892a5627db7b format=json bytes=25
}
