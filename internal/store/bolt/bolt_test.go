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

	bbolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/bolt"
	"github.com/confighub/confighub/test/storetest"
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
	storetest.Run(t, func(t *testing.T, _ store.Retention) store.Store {
		return open(t, filepath.Join(t.TempDir(), "confighub.db"))
	}, storetest.CurrentOnly(), storetest.WithReopen(func(t *testing.T, s store.Store, _ store.Retention) store.Store {
		path := s.(*bolt.Store).Path()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return open(t, path)
	}))
}

// The variant without freelist sync must behave the same.
func TestConformanceNoFreelistSync(t *testing.T) {
	storetest.Run(t, func(t *testing.T, _ store.Retention) store.Store {
		return open(t, filepath.Join(t.TempDir(), "confighub.db"), bolt.WithNoFreelistSync())
	}, storetest.CurrentOnly())
}

func TestCreatesParentDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "confighub.db")
	open(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("store file not created: %v", err)
	}
}

// A data dir Open creates survives a power loss: the parent of each
// directory it created is flushed before anything is acked in it.
func TestCreatedDirsAreFlushed(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "confighub.db")
	var synced []string
	open(t, path, bolt.WithSyncDirHook(func(dir string) { synced = append(synced, dir) }))
	want := []string{root, filepath.Join(root, "a")}
	if fmt.Sprint(synced) != fmt.Sprint(want) {
		t.Fatalf("flushed %v while creating the data dir, want %v", synced, want)
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
		if gerr != nil {
			t.Fatalf("truncated to %d of %d bytes: opened but the stream is not readable: %v", n, len(full), gerr)
		}
		if !bytes.Equal(got.Raw, last) || got.Generation != 3 {
			t.Fatalf("truncated to %d of %d bytes: opened but stream is gen %d (%d bytes)", n, len(full), got.Generation, len(got.Raw))
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

// blobs lists the config files beside the store file, sorted.
var blobs = bolt.BlobNames

func mustCommit(t *testing.T, s *bolt.Store, raw []byte, expected uint64) *config.Config {
	t.Helper()
	st, _, err := s.CommitConfig(context.Background(), storetest.NewStream("default", raw), expected)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Replaced configs' files are recycled (at most bolt.PoolMax kept free):
// one record file per stream stays, and the next Open removes the free ones.
func TestOneBlobPerStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	for i := range 5 {
		mustCommit(t, s, storetest.Cfg(i), 0)
		s.WaitRemoved()
	}
	other, _, err := s.CommitConfig(context.Background(), storetest.NewStream("other", storetest.Cfg(9)), 0)
	if err != nil || other.Generation != 1 {
		t.Fatal(other, err)
	}
	s.WaitRemoved()
	if b := blobs(t, path); len(b) < 2 || len(b) > 2+bolt.PoolMax {
		t.Fatalf("files after 5 commits to one stream and 1 to another: %v, want 2 + at most %d free", b, bolt.PoolMax)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path)
	if b := blobs(t, path); len(b) != 2 {
		t.Fatalf("files after reopen: %v, want 2", b)
	}
}

// kill -9 after StageConfig, before Commit: the staged bytes are not part
// of any stream, and the next Open removes them. The previous generation
// is intact.
func TestCrashAfterStageLosesOnlyTheStagedBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	ctx := context.Background()
	mustCommit(t, s, storetest.Cfg(1), 0)
	if _, err := s.StageConfig(ctx, "default", storetest.Cfg(2), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StageConfig(ctx, "new", storetest.Cfg(3), nil); err != nil {
		t.Fatal(err)
	}
	s.WaitRemoved()
	if b := blobs(t, path); len(b) < 3 {
		t.Fatalf("files with two staged: %v", b)
	}
	// Neither commit nor discard: what a crash leaves.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, path)
	if b := blobs(t, path); len(b) != 1 {
		t.Fatalf("blob files after reopen: %v, want only the committed one", b)
	}
	if got := storetest.Get(t, s2, "default"); got.Generation != 1 || !bytes.Equal(got.Raw, storetest.Cfg(1)) {
		t.Fatalf("default after reopen: gen %d %q", got.Generation, got.Raw)
	}
	if _, err := s2.GetStream(ctx, "new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stream only staged exists after reopen: %v", err)
	}
	// Generations go on from the committed one.
	if g := mustCommit(t, s2, storetest.Cfg(4), 1).Generation; g != 2 {
		t.Fatalf("next generation %d, want 2", g)
	}
}

// kill -9 after a commit, before the replaced file was removed: the next
// Open removes it and keeps the current one. Files that are not ours are
// left alone.
func TestCrashBeforeRemovalOfReplacedBlob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	mustCommit(t, s, storetest.Cfg(1), 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path) // the free files go: one file left
	old := blobs(t, path)[0]
	keep, err := os.ReadFile(filepath.Join(path+".blobs", old))
	if err != nil {
		t.Fatal(err)
	}
	cur := mustCommit(t, s, storetest.Cfg(2), 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Put the replaced file back, as a crash before it was recycled leaves
	// it (a valid record of generation 1), and a file of someone else's.
	for name, b := range map[string][]byte{old: keep, "notes.txt": []byte("mine")} {
		if err := os.WriteFile(filepath.Join(path+".blobs", name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s2 := open(t, path)
	b := blobs(t, path)
	if len(b) != 2 || !slicesContains(b, "notes.txt") || slicesContains(b, old) {
		t.Fatalf("blob files after reopen: %v, want the current one and notes.txt", b)
	}
	if got := storetest.Get(t, s2, "default"); got.Generation != 2 || got.Hash != cur.Hash {
		t.Fatalf("after reopen: gen %d", got.Generation)
	}
}

func slicesContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// A meta record whose config file is missing, short or changed is corrupt,
// named, and nothing is reset: not the store file, not the other files.
func TestBrokenBlobIsCorrupt(t *testing.T) {
	flip := func(at func(n int) int) func(p string) error {
		return func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[at(len(b))] ^= 1
			return os.WriteFile(p, b, 0o600)
		}
	}
	for name, breakIt := range map[string]func(p string) error{
		"missing":   os.Remove,
		"truncated": func(p string) error { return os.Truncate(p, 10) },
		"short":     func(p string) error { return os.Truncate(p, 4096+20) },
		"changed":   flip(func(int) int { return 4096 + 5 }), // a config byte
		"header":    flip(func(int) int { return 9 }),        // the meta offset
		"meta":      flip(func(n int) int { return n - 3 }),  // the meta record
		"magic":     flip(func(int) int { return 0 }),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := open(t, path)
			mustCommit(t, s, storetest.Cfg(1), 0)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// A reopen leaves the one record file (free ones go).
			if err := open(t, path).Close(); err != nil {
				t.Fatal(err)
			}
			blob := filepath.Join(path+".blobs", blobs(t, path)[0])
			if err := breakIt(blob); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = bolt.Open(path)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), blob) {
				t.Fatalf("Open with a %s config file: %v, want ErrCorrupt naming %s", name, err, blob)
			}
			assertCorrupt(t, path, before)
			if _, serr := os.Stat(blob); (serr == nil) == (name == "missing") {
				t.Fatalf("the config file was changed by Open: %v", serr)
			}
		})
	}
}

// A failed check discards the staged bytes; a conflict or an unchanged
// hash removes them too. Nothing is visible.
func TestStagedDiscardConflictUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	ctx := context.Background()
	g, err := s.StageConfig(ctx, "default", []byte("{not json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Discard(); err != nil {
		t.Fatal(err)
	}
	if err := g.Discard(); err != nil {
		t.Fatalf("second Discard: %v", err)
	}
	if b := blobs(t, path); len(b) > bolt.PoolMax {
		t.Fatalf("files after Discard: %v, want at most %d free", b, bolt.PoolMax)
	}
	if _, err := s.GetStream(ctx, "default"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("discarded bytes are visible: %v", err)
	}
	first := mustCommit(t, s, storetest.Cfg(1), 0)
	for _, tc := range []struct {
		raw      []byte
		expected uint64
		wantErr  error
	}{{storetest.Cfg(2), 7, store.ErrConflict}, {storetest.Cfg(1), 0, nil}} {
		g, err := s.StageConfig(ctx, "default", tc.raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, unchanged, err := g.Commit(ctx, storetest.NewStream("default", tc.raw), tc.expected)
		if !errors.Is(err, tc.wantErr) || (err == nil && (!unchanged || got.Generation != first.Generation)) {
			t.Fatalf("commit: %v unchanged=%v gen %d, want %v", err, unchanged, got.Generation, tc.wantErr)
		}
		if _, _, err := g.Commit(ctx, storetest.NewStream("default", tc.raw), 0); err == nil {
			t.Fatal("a second Commit of one staged config succeeded")
		}
		s.WaitRemoved()
		if b := blobs(t, path); len(b) < 1 || len(b) > 1+bolt.PoolMax {
			t.Fatalf("files: %v, want generation 1's and at most %d free", b, bolt.PoolMax)
		}
	}
	// A commit of other bytes than those staged is refused.
	g, err = s.StageConfig(ctx, "default", storetest.Cfg(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Commit(ctx, storetest.NewStream("default", storetest.Cfg(55)), 0); err == nil {
		t.Fatal("commit of bytes that were not staged succeeded")
	}
	if b := blobs(t, path); len(b) < 1 || len(b) > 1+bolt.PoolMax {
		t.Fatalf("files after a refused commit: %v", b)
	}
	// Only generation 1 is a stream's: after reopen it is the one file.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	if got := storetest.Get(t, s, "default"); got.Generation != 1 {
		t.Fatalf("after reopen: gen %d", got.Generation)
	}
	if b := blobs(t, path); len(b) != 1 {
		t.Fatalf("files after reopen: %v, want 1", b)
	}
}

// A canceled stage leaves nothing behind.
func TestCanceledStage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.StageConfig(ctx, "default", storetest.Cfg(1), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled stage: %v", err)
	}
	if b := blobs(t, path); len(b) != 0 {
		t.Fatalf("blob files after a canceled stage: %v", b)
	}
}

// Commit needs nothing of StageConfig's context: the hub ends it once the
// stage returns, before it commits. Below DeferBelow (nothing written yet)
// and from it on, the commit is durable and reads back after a reopen.
func TestCommitAfterStageContextEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	var want []byte
	for i, raw := range [][]byte{storetest.Cfg(1), bytes.Repeat([]byte("x"), s.DeferBelow())} {
		ctx, cancel := context.WithCancel(context.Background())
		g, err := s.StageConfig(ctx, "default", raw, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := g.Commit(context.Background(), storetest.NewStream("default", raw), 0)
		if err != nil || got.Generation != uint64(i+1) {
			t.Fatalf("commit of %d bytes after the stage's context ended: %v, %v", len(raw), got, err)
		}
		want = raw
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Get(t, open(t, path), "default"); got.Generation != 2 || !bytes.Equal(got.Raw, want) {
		t.Fatalf("after reopen: generation %d, %d bytes; want 2, %d bytes", got.Generation, len(got.Raw), len(want))
	}
}

// The stage feeds tee every byte, in order.
func TestStageTee(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "confighub.db"))
	raw := bytes.Repeat([]byte("0123456789"), 300000) // > one write chunk
	var tee bytes.Buffer
	if _, err := s.StageConfig(context.Background(), "default", raw, &tee); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tee.Bytes(), raw) {
		t.Fatalf("tee got %d bytes, not the %d staged", tee.Len(), len(raw))
	}
}

// A store written by a hub of layout 1 (config bytes inline in bbolt)
// opens with its config; the next commit moves the stream to a blob.
func TestLayout1StillReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	raw := storetest.Cfg(1)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(`{"generation":4,"hash":%q,"format":"json","size":%d,"accept_time":"2026-01-02T03:04:05Z"}`, config.Hash(raw), len(raw))
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range []string{"info", "streams", "sinks", "applied"} {
			if _, err := tx.CreateBucket([]byte(b)); err != nil {
				return err
			}
		}
		if err := tx.Bucket([]byte("info")).Put([]byte("layout"), []byte("1")); err != nil {
			return err
		}
		st, err := tx.Bucket([]byte("streams")).CreateBucket([]byte("default"))
		if err != nil {
			return err
		}
		if err := st.Put([]byte("meta"), []byte(meta)); err != nil {
			return err
		}
		return st.Put([]byte("config"), raw)
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	s := open(t, path)
	got := storetest.Get(t, s, "default")
	if got.Generation != 4 || !bytes.Equal(got.Raw, raw) {
		t.Fatalf("layout 1 stream: gen %d %q", got.Generation, got.Raw)
	}
	next := mustCommit(t, s, storetest.Cfg(2), 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, path)
	if got := storetest.Get(t, s2, "default"); got.Generation != 5 || got.Hash != next.Hash {
		t.Fatalf("after a commit on a layout 1 store: gen %d", got.Generation)
	}
	if b := blobs(t, path); len(b) != 1 {
		t.Fatalf("blob files: %v", b)
	}
}

// TestTruncatedFileLeavesNoLock: a store file cut short is refused before
// bbolt maps it, so nothing keeps the file locked: once the file is
// restored, Open succeeds in the same process (bbolt faulting on a mapping
// past the end would have kept the lock for good).
func TestTruncatedFileLeavesNoLock(t *testing.T) {
	path, full, last := populated(t)
	if err := os.WriteFile(path, full[:3*4096+5], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Open(path); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("Open of a truncated file: %v, want ErrCorrupt naming the truncation", err)
	}
	if err := os.WriteFile(path, full, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(path, bolt.WithLockTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("Open after restoring the file: %v", err)
	}
	defer s.Close()
	if got, err := s.GetStream(context.Background(), "default"); err != nil || !bytes.Equal(got.Raw, last) {
		t.Fatalf("stream after restore: %v", err)
	}
}

// TestConvergedBucketAddedToAnOlderFile: a file written by a hub that kept
// no convergence records opens, gets the bucket, and keeps them after.
func TestConvergedBucketAddedToAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CommitConfig(context.Background(), storetest.NewStream("default", storetest.Cfg(1)), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("converged")) }); err != nil {
		t.Fatalf("making an older file: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, path)
	c := store.Converged{Stream: "default", Generation: 1, Time: time.Date(2026, 2, 3, 4, 5, 6, 42_000_000, time.UTC)}
	if err := s2.RecordConverged(context.Background(), c); err != nil {
		t.Fatalf("RecordConverged on an older file: %v", err)
	}
	path2 := s2.Path()
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := open(t, path2).ListConverged(context.Background())
	if err != nil || len(got) != 1 || !got[0].Time.Equal(c.Time) || got[0].Generation != 1 {
		t.Fatalf("ListConverged after reopen: %+v %v, want %+v", got, err, c)
	}
}
