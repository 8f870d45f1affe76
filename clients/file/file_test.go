package file_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"sigs.k8s.io/yaml"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/file"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const jsonCfg = `{"_format_version":"3.0","services":[{"name":"svc","url":"http://a.example"}]}`
const yamlCfg = "_format_version: \"3.0\"\nservices:\n- name: svc\n  url: http://a.example\n"

func cfgOf(t *testing.T, gen uint64, raw string) *config.Config {
	t.Helper()
	ch, err := config.Check([]byte(raw), config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	return config.New("default", gen, config.Hash([]byte(raw)), ch.Format, []byte(raw), nil, nil, time.Unix(0, 0))
}

func newSink(t *testing.T, path string, f confighubv1.Format) sink.Sink {
	t.Helper()
	r := sink.NewRegistry()
	if err := file.Register(r); err != nil {
		t.Fatal(err)
	}
	k, ok := r.Lookup("file")
	if !ok {
		t.Fatal("file kind not registered")
	}
	spec := &confighubv1.Sink{Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: path, Format: f}}}
	if r.KindOf(spec) != "file" {
		t.Fatalf("KindOf = %q", r.KindOf(spec))
	}
	s, err := k.Factory(spec, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameJSON(t *testing.T, a, b []byte) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	if string(xa) != string(ya) {
		t.Fatalf("different content:\n%s\n%s", xa, ya)
	}
}

func TestApplyWritesBytesAsPushed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kong.yaml")
	s := newSink(t, path, confighubv1.Format_FORMAT_UNSPECIFIED)
	for gen, raw := range []string{yamlCfg, jsonCfg} {
		if err := s.Apply(context.Background(), cfgOf(t, uint64(gen+1), raw)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != raw {
			t.Fatalf("generation %d: file holds %q, want %q", gen+1, got, raw)
		}
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the target", len(ents))
	}
}

func TestApplyRendersJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kong.json")
	s := newSink(t, path, confighubv1.Format_FORMAT_JSON)
	if err := s.Apply(context.Background(), cfgOf(t, 1, yamlCfg)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	sameJSON(t, got, []byte(jsonCfg))
}

func TestApplyRendersYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kong.yaml")
	s := newSink(t, path, confighubv1.Format_FORMAT_YAML)
	if err := s.Apply(context.Background(), cfgOf(t, 1, jsonCfg)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if got[0] == '{' {
		t.Fatalf("expected YAML, got %s", got)
	}
	js, err := yaml.YAMLToJSON(got)
	if err != nil {
		t.Fatalf("file is not YAML: %v", err)
	}
	sameJSON(t, js, []byte(jsonCfg))
}

func TestApplyMissingDirIsRetryable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "kong.json")
	s := newSink(t, path, confighubv1.Format_FORMAT_UNSPECIFIED)
	err := s.Apply(context.Background(), cfgOf(t, 1, jsonCfg))
	e, ok := sink.AsError(err)
	if !ok {
		t.Fatalf("want *sink.Error, got %v", err)
	}
	if e.Permanent || e.Code != sink.CodeUnavailable {
		t.Fatalf("a missing directory must be a retryable write error, got %+v", e)
	}
}

func TestWriteAtomicFailureLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	// The target is a non-empty directory: the rename fails, the target is
	// untouched and the temporary file is removed.
	target := filepath.Join(dir, "sub")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := file.WriteAtomic(target, []byte("new"), 0o644); err == nil {
		t.Fatal("renaming over a non-empty directory must fail")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "sub" || !ents[0].IsDir() {
		t.Fatalf("directory holds %v, want only sub/", ents)
	}
}

func TestApplyHonoursCancelledContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kong.json")
	s := newSink(t, path, confighubv1.Format_FORMAT_UNSPECIFIED)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Apply(ctx, cfgOf(t, 1, jsonCfg)); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("a cancelled apply must not write")
	}
}

func TestFactoryRejectsBadSpecs(t *testing.T) {
	for name, spec := range map[string]*confighubv1.Sink{
		"no spec":    {Name: "f", Kind: "file"},
		"empty path": {Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{}}},
		"bad format": {Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "/tmp/x", Format: 9}}},
	} {
		if _, err := file.New(spec, sink.Deps{}); !errors.Is(err, sink.ErrInvalidSpec) {
			t.Errorf("%s: want ErrInvalidSpec, got %v", name, err)
		}
	}
}

func TestRegisterTwiceFails(t *testing.T) {
	r := sink.NewRegistry()
	if err := file.Register(r); err != nil {
		t.Fatal(err)
	}
	if err := file.Register(r); err == nil {
		t.Fatal("second Register must fail")
	}
}

// A Kong configuration holds secrets (credentials, private keys): the file
// is readable by its owner only.
func TestApplyWritesOwnerOnlyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kong.json")
	s := newSink(t, path, confighubv1.Format_FORMAT_UNSPECIFIED)
	if err := s.Apply(context.Background(), cfgOf(t, 1, jsonCfg)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("mode %v, want 0600", m)
	}
}
