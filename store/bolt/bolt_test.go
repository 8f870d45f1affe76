package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/confighub/confighub/store"
	"github.com/confighub/confighub/store/bolt"
	"github.com/confighub/confighub/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, path string, opts ...bolt.Option) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "confighub.db"))
	}, storetest.WithReopen(func(t *testing.T, s store.Store) store.Store {
		path := s.(*bolt.Store).Path()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return open(t, path)
	}))
}

// The variant without freelist sync must behave the same.
func TestConformanceNoFreelistSync(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "confighub.db"), bolt.WithNoFreelistSync())
	})
}

func TestCreatesParentDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "confighub.db")
	open(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("store file not created: %v", err)
	}
}

func assertCorrupt(t *testing.T, path string, before []byte) {
	t.Helper()
	s, err := bolt.Open(path, bolt.WithLockTimeout(time.Second))
	if err == nil {
		_ = s.Close()
		t.Fatal("Open of a broken file succeeded")
	}
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open error %q does not wrap store.ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("Open error %q does not name the file %s", err, path)
	}
	after, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("Open changed the broken file (silent reset)")
	}
}

func TestGarbageFileIsCorrupt(t *testing.T) {
	for name, content := range map[string][]byte{
		"text":  bytes.Repeat([]byte("this is not a bbolt file\n"), 3000),
		"tiny":  []byte("x"),
		"zeros": make([]byte, 64<<10),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			assertCorrupt(t, path, content)
		})
	}
}

// populated writes a store with a few generations and returns its path,
// bytes and the last config.
func populated(t *testing.T) (string, []byte, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "confighub.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	big := bytes.Repeat([]byte(`{"k":"v"},`), 50000)
	var last []byte
	for i := range 3 {
		last = fmt.Appendf(nil, `{"_format_version":"3.0","x":[%s{"n":%d}]}`, big, i)
		if _, _, err := s.CommitConfig(ctx, storetest.NewStream("default", last), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b, last
}

// A truncated file either still holds every live page (free pages lost
// only) and opens with the last config intact, or fails as corrupt: never
// opens with data missing.
func TestTruncatedFile(t *testing.T) {
	path, full, last := populated(t)
	corrupt := 0
	// The config bytes live in blob files, so the live pages of the bbolt
	// file are a few pages at its start: cut there too.
	var cuts []int
	for _, frac := range []float64{0.01, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99} {
		cuts = append(cuts, int(float64(len(full))*frac))
	}
	cuts = append(cuts, 100, 4096, 2*4096, 3*4096+5, 5*4096)
	for _, n := range cuts {
		b := full[:n]
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := bolt.Open(path)
		if err != nil {
			assertCorrupt(t, path, b)
			corrupt++
			continue
		}
		got, gerr := s.GetStream(context.Background(), "default")
		_ = s.Close()
		if gerr != nil || !bytes.Equal(got.Config, last) || got.Generation != 3 {
			t.Fatalf("truncated to %d of %d bytes: opened but stream is gen %d (%d bytes), err %v", n, len(full), got.Generation, len(got.Config), gerr)
		}
	}
	if corrupt == 0 {
		t.Fatal("no truncation point was detected as corrupt")
	}
	t.Logf("%d of %d truncation points detected as corrupt, the rest kept every live page", corrupt, len(cuts))
}

func TestOverwrittenPagesAreCorrupt(t *testing.T) {
	path, b, _ := populated(t)
	// Keep the two meta pages (the first two 4 KiB pages) and scribble on
	// everything else: the meta checksums pass, the tree does not.
	for i := 2 * 4096; i < len(b); i++ {
		b[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	assertCorrupt(t, path, b)
}

func TestSecondOpenFailsInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	open(t, path)
	// flock is per open file, so a second Open in this process contends
	// like a second hub process would.
	s, err := bolt.Open(path, bolt.WithLockTimeout(50*time.Millisecond))
	if err == nil {
		_ = s.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, bolt.ErrInUse) || !strings.Contains(err.Error(), "data dir in use by another process") || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open error = %q, want ErrInUse naming %s", err, path)
	}
}
