package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fatalTB records the first Fatalf and ends the calling goroutine, as
// testing.T does, so a test can assert that a helper fails its caller.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs fn with a fatalTB and returns its Fatalf message ("" if none).
func fatalOf(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); fn(tb) }()
	<-done
	return tb.msg
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFixturesFromAnyPackage: the repository's own fixtures are found from
// this package, all 58 of them.
func TestFixturesFromAnyPackage(t *testing.T) {
	files := Fixtures(t)
	if len(files) != 58 {
		t.Fatalf("%d fixtures, want the 58 kic-golden configurations", len(files))
	}
	if b := Fixture(t, "credentials__default.yaml"); !strings.Contains(string(b), "_format_version") {
		t.Fatalf("credentials__default.yaml is not a Kong configuration: %.80q", b)
	}
}

// TestFixturesWalkPastNestedModules: from a folder of a nested module
// (api/ has its own go.mod) the walk goes on to the root module's go.mod.
func TestFixturesWalkPastNestedModules(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module "+rootModule+"\n\ngo 1.26\n")
	writeFile(t, filepath.Join(root, "api", "go.mod"), "module "+rootModule+"/api\n")
	writeFile(t, filepath.Join(root, FixturesSubdir, "a.yaml"), "_format_version: \"3.0\"\n")
	if err := os.MkdirAll(filepath.Join(root, "api", "hubclient"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "api", "hubclient"))
	files := Fixtures(t)
	if want := filepath.Join(root, FixturesSubdir, "a.yaml"); len(files) != 1 || files[0] != want {
		t.Fatalf("Fixtures = %v, want [%s]", files, want)
	}
}

// TestMissingFixturesFail: a missing fixture folder, file or module root
// fails the test (a skip would hide that a clone cannot run its tests).
func TestMissingFixturesFail(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module "+rootModule+"\n")
	t.Chdir(root)
	if msg := fatalOf(t, func(tb testing.TB) { Fixtures(tb) }); !strings.Contains(msg, FixturesSubdir+" is missing") {
		t.Errorf("no fixture folder: Fatalf(%q)", msg)
	}
	writeFile(t, filepath.Join(root, FixturesSubdir, "README.md"), "no configurations\n")
	if msg := fatalOf(t, func(tb testing.TB) { Fixtures(tb) }); !strings.Contains(msg, "no *.yaml files") {
		t.Errorf("an empty fixture folder: Fatalf(%q)", msg)
	}
	if msg := fatalOf(t, func(tb testing.TB) { Fixture(tb, "nope.yaml") }); !strings.Contains(msg, "nope.yaml") {
		t.Errorf("a missing fixture: Fatalf(%q)", msg)
	}
	t.Chdir(t.TempDir())
	if msg := fatalOf(t, func(tb testing.TB) { FixturesDir(tb) }); !strings.Contains(msg, "no go.mod of module "+rootModule) {
		t.Errorf("outside the repository: Fatalf(%q)", msg)
	}
}
