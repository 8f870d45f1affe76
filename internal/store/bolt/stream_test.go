package bolt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
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

// A streamed stage, small (commit log size) or large, commits without the
// bytes in hand and returns them read back, or with the bytes the caller
// kept and returns those, not read again; readers and the next Open find
// them.
func TestStageStreamCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	ctx := context.Background()
	var want []*config.Config
	for i, size := range []int{100, 300 << 10, 3 << 20, 200, 2 << 20} {
		raw := big(i, size)
		kept := i >= 3 // the caller kept the bytes it wrote
		g := stageStream(t, s, "default", raw, 7777)
		var in []byte
		if kept {
			in = raw
		}
		got, unchanged, err := g.Commit(ctx, config.New("default", 0, config.Hash(raw), config.FormatJSON, in, nil, nil, time.Time{}), uint64(i))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if unchanged || got.Generation != uint64(i+1) || !bytes.Equal(got.Raw, raw) {
			t.Fatalf("size %d: gen %d, unchanged %v, %d bytes back", size, got.Generation, unchanged, len(got.Raw))
		}
		if kept != (&got.Raw[0] == &raw[0]) {
			t.Fatalf("size %d: the caller kept the bytes: %v, the commit returned them: %v", size, kept, &got.Raw[0] == &raw[0])
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
	// The same bytes again: unchanged, nothing read back.
	last := want[len(want)-1]
	g := stageStream(t, s, "default", last.Raw, 1<<20)
	got, unchanged, err := g.Commit(ctx, config.New("default", 0, last.Hash, config.FormatJSON, nil, nil, nil, time.Time{}), 0)
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

// A record file a streamed commit is reading back is not recycled: the
// background defers it until the read is done, then recycles it.
func TestPinnedFileWaitsForRecycling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	commitT(t, s, labelled(big(1, 1000), 1), 0)
	name := s.streams["default"].meta.Blob
	keep, err := os.ReadFile(filepath.Join(s.blobDir, name))
	if err != nil {
		t.Fatal(err)
	}
	s.pin(name)
	commitT(t, s, labelled(big(2, 1000), 2), 1)
	s.WaitRemoved()
	if now, err := os.ReadFile(filepath.Join(s.blobDir, name)); err != nil || !bytes.Equal(now, keep) {
		t.Fatalf("the pinned file changed or went: %v", err)
	}
	if inPool(s, name) {
		t.Fatal("the pinned file is in the pool")
	}
	s.unpin(name)
	s.WaitRemoved()
	if !inPool(s, name) {
		t.Fatal("the file was not recycled once unpinned")
	}
}

// inPool says whether the record file name is free in s's pool.
func inPool(s *Store, name string) bool {
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	return slices.ContainsFunc(s.pool, func(e poolFile) bool { return e.name == name })
}
