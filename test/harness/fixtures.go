package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// rootModule is the module path of the repository's top go.mod; other
// go.mod files below it (api/) belong to nested modules and are walked past.
const rootModule = "github.com/confighub/confighub"

// FixturesSubdir is where the Kong Ingress Controller golden configurations
// live, relative to the repository's top folder.
const FixturesSubdir = "testdata/kic-golden"

// findRoot walks up from dir to the folder whose go.mod declares rootModule.
func findRoot(dir string) (string, error) {
	for d := dir; ; {
		if moduleOf(filepath.Join(d, "go.mod")) == rootModule {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("no go.mod of module %s in %s or any folder above it", rootModule, dir)
		}
		d = up
	}
}

// moduleOf is the module path a go.mod declares ("" if unreadable).
func moduleOf(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// FixturesDir is the folder of the golden configurations; the test fails
// (never skips) when it cannot be found, since a clone always has it.
func FixturesDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	root, err := findRoot(wd)
	if err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	dir := filepath.Join(root, filepath.FromSlash(FixturesSubdir))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("fixtures: %v (the repository's %s is missing)", err, FixturesSubdir)
	}
	return dir
}

// FixturePath is the path of one golden configuration, e.g.
// "credentials__default.yaml"; the test fails if it does not exist.
func FixturePath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(FixturesDir(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return p
}

// Fixture is the content of one golden configuration; the test fails if it
// cannot be read.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(FixturePath(t, name))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return b
}

// Fixtures is the sorted paths of every golden configuration (*.yaml); the
// test fails if there are none.
func Fixtures(t testing.TB) []string {
	t.Helper()
	dir := FixturesDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err == nil && len(files) == 0 {
		err = errors.New("no *.yaml files")
	}
	if err != nil {
		t.Fatalf("fixtures in %s: %v", dir, err)
	}
	sort.Strings(files)
	return files
}
