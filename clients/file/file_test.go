package file_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// newSink builds a file sink writing to path, an absolute path under the
// root filepath.Dir(path).
func newSink(t *testing.T, path string, f confighubv1.Format) sink.Sink {
	t.Helper()
	s, err := newSinkIn(filepath.Dir(path), path, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newSinkIn builds a file sink of the registered kind, confined to root.
func newSinkIn(root, path string, f confighubv1.Format) (sink.Sink, error) {
	r := sink.NewRegistry()
	if err := file.Register(r, root); err != nil {
		return nil, err
	}
	k, ok := r.Lookup("file")
	if !ok {
		return nil, errors.New("file kind not registered")
	}
	spec := &confighubv1.Sink{Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: path, Format: f}}}
	if r.KindOf(spec) != "file" {
		return nil, fmt.Errorf("KindOf = %q", r.KindOf(spec))
	}
	return k.Factory(spec, sink.Deps{})
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

// TestApplyCreatesFolders: a path into folders that do not exist yet (nor
// the root) is written on the first apply, not failed and retried with a
// growing backoff.
func TestApplyCreatesFolders(t *testing.T) {
	root := filepath.Join(t.TempDir(), "out")
	s, err := newSinkIn(root, "a/b/kong.json", confighubv1.Format_FORMAT_UNSPECIFIED)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), cfgOf(t, 1, jsonCfg)); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "a", "b", "kong.json")); err != nil || string(got) != jsonCfg {
		t.Fatalf("read back: %q, %v", got, err)
	}
}

// TestApplyWriteErrorIsRetryable: a folder that cannot be created (a file
// is in the way) is a retryable write error: the disk may be fixed.
func TestApplyWriteErrorIsRetryable(t *testing.T) {
	root := t.TempDir()
	s, err := newSinkIn(root, "a/kong.json", confighubv1.Format_FORMAT_UNSPECIFIED)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = s.Apply(context.Background(), cfgOf(t, 1, jsonCfg))
	e, ok := sink.AsError(err)
	if !ok {
		t.Fatalf("want *sink.Error, got %v", err)
	}
	if e.Permanent || e.Code != sink.CodeUnavailable {
		t.Fatalf("a write failure must be retryable, got %+v", e)
	}
}

// TestFactoryConfinesPaths: a path that leaves the root, lexically or
// through a symbolic link, or that cannot be a file (a folder, under a
// file) is ErrInvalidSpec; relative paths and absolute
// paths under the root (also spelled through a link to the root) are
// accepted, including into folders that do not exist yet.
func TestFactoryConfinesPaths(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "kong.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"up":       "..",
		"abs":      outside,
		"file-out": filepath.Join(outside, "victim.json"),
		"dangling": filepath.Join(outside, "nope"),
		"in":       "sub",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	rootLink := filepath.Join(base, "root-link")
	if err := os.Symlink(root, rootLink); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../outside/x.json", "sub/../../outside/x.json", outside + "/x.json", "/etc/passwd", root, ".", "up/outside/x.json",
		"abs/x.json", "file-out", "dangling/x.json", "sub", "kong.json/x"} {
		if _, err := newSinkIn(root, p, confighubv1.Format_FORMAT_UNSPECIFIED); !errors.Is(err, sink.ErrInvalidSpec) {
			t.Errorf("path %q: want ErrInvalidSpec, got %v", p, err)
		}
	}
	for _, p := range []string{"kong.json", "sub/kong.json", "new/deeper/kong.json", "in/kong.json", "./x/../kong.json",
		filepath.Join(root, "kong.json")} {
		if _, err := newSinkIn(root, p, confighubv1.Format_FORMAT_UNSPECIFIED); err != nil {
			t.Errorf("path %q: %v", p, err)
		}
	}
	// The root given through a link: an absolute path may use its real
	// spelling.
	if _, err := newSinkIn(rootLink, filepath.Join(root, "sub", "kong.json"), confighubv1.Format_FORMAT_UNSPECIFIED); err != nil {
		t.Errorf("root %s, path under its target: %v", rootLink, err)
	}
	// A root that does not exist yet: only the lexical rule applies.
	if _, err := newSinkIn(filepath.Join(base, "later"), "x/kong.json", confighubv1.Format_FORMAT_UNSPECIFIED); err != nil {
		t.Error(err)
	}
	if _, err := newSinkIn(filepath.Join(base, "later"), "../kong.json", confighubv1.Format_FORMAT_UNSPECIFIED); !errors.Is(err, sink.ErrInvalidSpec) {
		t.Errorf("../ under a missing root: want ErrInvalidSpec, got %v", err)
	}
}

// TestWriteRefusesLinkSwappedIn: a folder accepted at PutSink and swapped
// for a link out of the root afterwards fails the write; nothing is
// written outside.
func TestWriteRefusesLinkSwappedIn(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(outside, 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := newSinkIn(root, "sub/kong.json", confighubv1.Format_FORMAT_UNSPECIFIED)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	err = s.Apply(context.Background(), cfgOf(t, 1, jsonCfg))
	if e, ok := sink.AsError(err); !ok || e.Code != sink.CodeUnavailable {
		t.Fatalf("want a write error, got %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside the root: %v", ents)
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
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := file.WriteAtomic(r, "sub", []byte("new"), 0o644); err == nil {
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
	factory, err := file.Factory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]*confighubv1.Sink{
		"no spec":    {Name: "f", Kind: "file"},
		"empty path": {Name: "f", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{}}},
	} {
		if _, err := factory(spec, sink.Deps{}); !errors.Is(err, sink.ErrInvalidSpec) {
			t.Errorf("%s: want ErrInvalidSpec, got %v", name, err)
		}
	}
}

func TestRegisterTwiceFails(t *testing.T) {
	r := sink.NewRegistry()
	if err := file.Register(r, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := file.Register(r, t.TempDir()); err == nil {
		t.Fatal("second Register must fail")
	}
	if err := file.Register(sink.NewRegistry(), ""); err == nil {
		t.Fatal("an empty root must fail")
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
