package bolt

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// stageStream writes raw in pieces of n bytes and returns the handle.
func stageStream(t *testing.T, s *Store, stream string, raw []byte, n int) store.Staged {
	t.Helper()
	w, err := s.StageStream(context.Background(), stream, int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(raw); off += n {
		if _, err := w.Write(raw[off:min(off+n, len(raw))]); err != nil {
			t.Fatal(err)
		}
	}
	g, err := w.Staged()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A streamed stage, small (commit log size) or large, commits with the
// bytes the caller wrote and returns those, not read again; readers and
// the next Open find them.
func TestStageStreamCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	ctx := context.Background()
	var want []*config.Config
	for i, size := range []int{100, 300 << 10, 3 << 20, 200, 2 << 20} {
		raw := big(i, size)
		g := stageStream(t, s, "default", raw, 7777)
		got, unchanged, err := g.Commit(ctx, config.New("default", 0, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Time{}), uint64(i))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if unchanged || got.Generation != uint64(i+1) || &got.Raw[0] != &raw[0] || len(got.Raw) != len(raw) {
			t.Fatalf("size %d: gen %d, unchanged %v, %d bytes, the caller's: %v", size, got.Generation, unchanged, len(got.Raw), &got.Raw[0] == &raw[0])
		}
		r, err := s.GetStream(ctx, "default")
		if err != nil {
			t.Fatalf("size %d: read: %v", size, err)
		}
		if !bytes.Equal(r.Raw, raw) {
			t.Fatalf("size %d: read %d bytes", size, len(r.Raw))
		}
		want = append(want, got)
	}
	// The same bytes again: unchanged.
	last := want[len(want)-1]
	g := stageStream(t, s, "default", last.Raw, 1<<20)
	got, unchanged, err := g.Commit(ctx, config.New("default", 0, last.Hash, config.FormatJSON, last.Raw, nil, nil, time.Time{}), 0)
	if err != nil {
		t.Fatalf("same bytes: %v", err)
	}
	if !unchanged || got.Generation != 5 {
		t.Fatalf("same bytes: gen %d, unchanged %v", got.Generation, unchanged)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := openT(t, path).GetStream(ctx, "default")
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if r.Generation != 5 || !bytes.Equal(r.Raw, last.Raw) {
		t.Fatalf("reopen: gen %d", r.Generation)
	}
}

// A streamed stage takes no more than its size, and ends only whole; an
// incomplete or discarded one leaves nothing a reader or the next Open
// sees.
func TestStageStreamSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	w, err := s.StageStream(context.Background(), "default", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 11)); err == nil {
		t.Fatal("11 bytes into a stage of 10 were taken")
	}
	if _, err := w.Write(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Staged(); err == nil || !strings.Contains(err.Error(), "after 4") {
		t.Fatalf("a stage of 10 ended after 4: %v", err)
	}
	w, err = s.StageStream(context.Background(), "default", 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetStream(context.Background(), "default"); err == nil {
		t.Fatal("a discarded stage is readable")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openT(t, path)
	if n := files(t, path); n != 0 {
		t.Fatalf("%d files after Open, want none", n)
	}
}
