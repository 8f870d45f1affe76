package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	storetest.Run(t, func(t *testing.T, r store.Retention) store.Store {
		return open(t, filepath.Join(t.TempDir(), "confighub.db"), bolt.WithRetention(r))
	}, storetest.WithReopen(func(t *testing.T, s store.Store, r store.Retention) store.Store {
		path := s.(*bolt.Store).Path()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return open(t, path, bolt.WithRetention(r))
	}))
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
	// The data dir's parents, then the data dir (the record directory's
	// entry).
	want := []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}
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

// deferBelow is the size from which a configuration has a record file.
const deferBelow = 64 << 10

// bigCfg is a valid configuration of at least deferBelow bytes, distinct
// for each n.
func bigCfg(n int) []byte {
	pad := bytes.Repeat([]byte(`{"k":"v"},`), deferBelow/10+1)
	return fmt.Appendf(nil, `{"_format_version":"3.0","x":[%s{"n":%d}]}`, pad, n)
}

// blobs lists the record files beside the store file, sorted.
var blobs = bolt.BlobNames

func mustCommit(t *testing.T, s *bolt.Store, stream string, raw []byte, expected uint64) *config.Config {
	t.Helper()
	st, _, err := s.CommitConfig(context.Background(), storetest.NewStream(stream, raw), expected)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A configuration below DeferBelow lives in the index; from it on each
// retained generation has one record file, and the files of the
// generations dropped by the retention go with them.
func TestOneFilePerRetainedGeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path, bolt.WithRetention(store.Retention{History: 2}))
	for i := range 5 {
		mustCommit(t, s, "default", bigCfg(i), 0)
	}
	mustCommit(t, s, "small", storetest.Cfg(1), 0)
	if b := blobs(t, path); len(b) != 2 {
		t.Fatalf("files after 5 large commits keeping 2, and a small one: %v, want 2", b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path, bolt.WithRetention(store.Retention{History: 2}))
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
	mustCommit(t, s, "default", bigCfg(1), 0)
	g1, err := s.StageConfig(ctx, "default", bigCfg(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := s.StageConfig(ctx, "new", bigCfg(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := blobs(t, path); len(b) != 3 {
		t.Fatalf("files with two staged: %v", b)
	}
	snap := snapshot(t, path) // what kill -9 leaves
	_, _ = g1.Discard(), g2.Discard()
	s2 := open(t, snap)
	if b := blobs(t, snap); len(b) != 1 {
		t.Fatalf("record files after reopen: %v, want only the committed one", b)
	}
	if got := storetest.Get(t, s2, "default"); got.Generation != 1 || !bytes.Equal(got.Raw, bigCfg(1)) {
		t.Fatalf("default after reopen: gen %d", got.Generation)
	}
	if _, err := s2.GetStream(ctx, "new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stream only staged exists after reopen: %v", err)
	}
	if g := mustCommit(t, s2, "default", bigCfg(4), 1).Generation; g != 2 {
		t.Fatalf("next generation %d, want 2", g)
	}
}

// kill -9 after a record file was flushed, before the index names it:
// never acked, so the stream is at its previous generation and the file
// goes at the next Open.
func TestCrashAfterFlushBeforeIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	mustCommit(t, s, "default", bigCfg(1), 0)
	var snap string
	s.SetHookIndex(func() { snap = snapshot(t, path) })
	mustCommit(t, s, "default", bigCfg(2), 1)
	s2 := open(t, snap)
	if got := storetest.Get(t, s2, "default"); got.Generation != 1 || !bytes.Equal(got.Raw, bigCfg(1)) {
		t.Fatalf("after a crash before the index: gen %d, want 1", got.Generation)
	}
	if b := blobs(t, snap); len(b) != 1 {
		t.Fatalf("record files: %v, want generation 1's", b)
	}
}

// kill -9 after the retention dropped a generation from the index, before
// its file was removed: the next Open removes it. Files that are not ours
// are left alone.
func TestCrashBeforeRemovalOfDroppedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	r := bolt.WithRetention(store.Retention{History: 1})
	s := open(t, path, r)
	mustCommit(t, s, "default", bigCfg(1), 0)
	old := blobs(t, path)[0]
	keep, err := os.ReadFile(filepath.Join(path+".blobs", old))
	if err != nil {
		t.Fatal(err)
	}
	cur := mustCommit(t, s, "default", bigCfg(2), 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{old: keep, "notes.txt": []byte("mine")} {
		if err := os.WriteFile(filepath.Join(path+".blobs", name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s2 := open(t, path, r)
	b := blobs(t, path)
	if len(b) != 2 || !slices.Contains(b, "notes.txt") || slices.Contains(b, old) {
		t.Fatalf("files after reopen: %v, want the current record and notes.txt", b)
	}
	if got := storetest.Get(t, s2, "default"); got.Generation != 2 || got.Hash != cur.Hash {
		t.Fatalf("after reopen: gen %d", got.Generation)
	}
}

// snapshot copies the store file and its record directory to a new dir,
// as kill -9 at that point leaves them, and returns the copy's path.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "confighub.db")
	copyFile(t, path, dst)
	if err := os.Mkdir(dst+".blobs", 0o750); err != nil {
		t.Fatal(err)
	}
	for _, n := range blobs(t, path) {
		copyFile(t, filepath.Join(path+".blobs", n), filepath.Join(dst+".blobs", n))
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A record file that is short or whose bytes changed is corrupt, and the
// error names that one record; a missing one is an I/O error naming the
// file and its errno. Nothing is reset, and no message advises moving the
// store away.
func TestBrokenRecordNamesItself(t *testing.T) {
	for name, c := range map[string]struct {
		breakIt func(p string) error
		corrupt bool
		says    string
	}{
		"missing":   {os.Remove, false, "ENOENT"},
		"truncated": {func(p string) error { return os.Truncate(p, 10) }, true, "hold 10 bytes"},
		"changed": {func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[5] ^= 1
			return os.WriteFile(p, b, 0o600)
		}, true, "hash to"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := open(t, path)
			mustCommit(t, s, "default", bigCfg(1), 0)
			mustCommit(t, s, "other", bigCfg(2), 0)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var blob string
			for _, n := range blobs(t, path) {
				if b, _ := os.ReadFile(filepath.Join(path+".blobs", n)); bytes.Equal(b, bigCfg(1)) {
					blob = filepath.Join(path+".blobs", n)
				}
			}
			if err := c.breakIt(blob); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = bolt.Open(path)
			if err == nil || errors.Is(err, store.ErrCorrupt) != c.corrupt || !strings.Contains(err.Error(), blob) ||
				!strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "move") {
				t.Fatalf("Open with a %s record file: %v; want corrupt=%v naming %s and saying %q, and no advice to move the store", name, err, c.corrupt, blob, c.says)
			}
			if c.corrupt && !strings.Contains(err.Error(), `stream "default" generation 1`) {
				t.Fatalf("a corrupt record not named by stream and generation: %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("Open changed the store file")
			}
			if b := blobs(t, path); len(b) != 2-boolInt(name == "missing") {
				t.Fatalf("Open removed a record file: %v", b)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Too many open files says to raise the limit; another errno is named.
func TestIOErrorsSayWhatTheyAre(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "confighub.db"))
	for errno, want := range map[syscall.Errno]string{syscall.EMFILE: "raise the open-files limit", syscall.EIO: "EIO"} {
		err := s.IOErr("read", "/x/y.rec", &fs.PathError{Op: "open", Path: "/x/y.rec", Err: errno})
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/x/y.rec") || errors.Is(err, store.ErrCorrupt) || !errors.Is(err, errno) {
			t.Errorf("%v: %v, want it to name the file and say %q, not corrupt", errno, err, want)
		}
	}
}

// A failed check discards the staged bytes; a conflict or an unchanged
// hash removes them too. Nothing is visible, no file stays.
func TestStagedDiscardConflictUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	ctx := context.Background()
	g, err := s.StageConfig(ctx, "default", bigCfg(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(g.Discard(), g.Discard()); err != nil {
		t.Fatal(err)
	}
	if b := blobs(t, path); len(b) != 0 {
		t.Fatalf("files after Discard: %v", b)
	}
	first := mustCommit(t, s, "default", bigCfg(1), 0)
	g, err = s.StageConfig(ctx, "default", bigCfg(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Commit(ctx, storetest.NewStream("default", bigCfg(2)), 7); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("conflict: %v", err)
	}
	g, err = s.StageConfig(ctx, "default", bigCfg(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, unchanged, err := g.Commit(ctx, storetest.NewStream("default", bigCfg(1)), 0); err != nil || !unchanged || got.Generation != 1 {
		t.Fatalf("unchanged: %v %v %v", got, unchanged, err)
	}
	if b := blobs(t, path); len(b) != 1 {
		t.Fatalf("files after a conflict and an unchanged commit: %v, want generation 1's", b)
	}
	if got := storetest.Get(t, s, "default"); got.Hash != first.Hash {
		t.Fatal("the stream changed")
	}
}

// A canceled stage leaves nothing behind.
func TestCanceledStage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.StageConfig(ctx, "default", bigCfg(1), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled stage: %v", err)
	}
	if b := blobs(t, path); len(b) != 0 {
		t.Fatalf("files after a canceled stage: %v", b)
	}
}

// Commit needs nothing of StageConfig's context: the hub ends it once the
// stage returns, before it commits. Below DeferBelow and from it on, the
// commit is durable and reads back after a reopen.
func TestCommitAfterStageContextEnds(t *testing.T) {
	for _, raw := range [][]byte{storetest.Cfg(1), bigCfg(1)} {
		path := filepath.Join(t.TempDir(), "confighub.db")
		s := open(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		g, err := s.StageConfig(ctx, "default", raw, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.Commit(context.Background(), storetest.NewStream("default", raw), 0); err != nil {
			t.Fatalf("%d bytes: commit after the stage's context ended: %v", len(raw), err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := storetest.Get(t, open(t, path), "default"); !bytes.Equal(got.Raw, raw) {
			t.Fatalf("%d bytes: not durable", len(raw))
		}
	}
}

// The stage feeds tee every byte, in order, at both sizes.
func TestStageTee(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "confighub.db"))
	for _, raw := range [][]byte{storetest.Cfg(1), bytes.Repeat(bigCfg(1), 20)} {
		var tee bytes.Buffer
		g, err := s.StageConfig(context.Background(), "default", raw, &tee)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tee.Bytes(), raw) {
			t.Fatalf("tee got %d of %d bytes, or out of order", tee.Len(), len(raw))
		}
		_ = g.Discard()
	}
}

// A failed flush is not acked and stops every later commit ("restart to
// recover": a flush after a failed one proves nothing); the next Open
// decides from what is on disk.
func TestFailedFlushStopsCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	mustCommit(t, s, "default", bigCfg(1), 0)
	s.SetHookSync(func(*os.File) error { return syscall.EIO })
	if _, _, err := s.CommitConfig(context.Background(), storetest.NewStream("default", bigCfg(2)), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("commit with a failing flush: %v, want EIO", err)
	}
	s.SetHookSync(nil)
	for _, raw := range [][]byte{storetest.Cfg(3), bigCfg(3)} {
		if _, _, err := s.CommitConfig(context.Background(), storetest.NewStream("default", raw), 0); err == nil || !strings.Contains(err.Error(), "restart to recover") {
			t.Fatalf("commit after a failed flush: %v, want restart to recover", err)
		}
	}
	if got := storetest.Get(t, s, "default"); got.Generation != 1 {
		t.Fatalf("a failed commit moved the stream to generation %d", got.Generation)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Get(t, open(t, path), "default"); got.Generation != 1 {
		t.Fatalf("after reopen: generation %d", got.Generation)
	}
}

// Close waits for commits under way and refuses later ones, so nothing is
// written once it returned.
func TestNoWriteAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	g, err := s.StageConfig(context.Background(), "default", bigCfg(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Commit(context.Background(), storetest.NewStream("default", bigCfg(1)), 0); err == nil {
		t.Fatal("a commit after Close succeeded")
	}
	if _, err := s.StageStream(context.Background(), "default", 10); err == nil {
		t.Fatal("a stage after Close succeeded")
	}
	if b := blobs(t, path); len(b) != 0 {
		t.Fatalf("files after a refused commit: %v", b)
	}
}

// A stream name or label that is not valid UTF-8 is refused (JSON would
// store another one).
func TestNonUTF8Refused(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "confighub.db"))
	for _, c := range []*config.Config{
		storetest.NewStream("bad\xff", storetest.Cfg(1)),
		config.New("ok", 0, config.Hash(storetest.Cfg(1)), config.FormatJSON, storetest.Cfg(1), nil, map[string]string{"k": "\xfe"}, time.Now()),
	} {
		if _, _, err := s.CommitConfig(context.Background(), c, 0); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("commit of %q %v: %v, want a UTF-8 refusal", c.Stream, c.Labels, err)
		}
	}
}

// A file of another data layout is refused, and kept as it is.
func TestOtherLayoutRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	if err := open(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("info")).Put([]byte("layout"), []byte("3")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := bolt.Open(path); err == nil || !strings.Contains(err.Error(), `layout "3"`) || errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of a layout 3 file: %v", err)
	}
}

// Concurrent commits to many streams share index transactions and each
// stream's generations stay contiguous.
func TestConcurrentCommitsContiguous(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "confighub.db"))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				stream := fmt.Sprint("s", w%3)
				if _, _, err := s.CommitConfig(context.Background(), storetest.NewStream(stream, storetest.Cfg(w*100+i)), 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := uint64(0)
	for i := range 3 {
		gens, err := s.ListGenerations(context.Background(), fmt.Sprint("s", i), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j, g := range gens {
			if g.Generation != gens[0].Generation-uint64(j) {
				t.Fatalf("s%d generations %v not contiguous", i, gens)
			}
		}
		total += gens[0].Generation
	}
	if total != 160 {
		t.Fatalf("%d generations in all, want 160", total)
	}
}

// Open reads every stream's record file one at a time and holds none of
// them open after, so a store of many streams opens under a small
// open-files limit.
func TestOpenHoldsNoFilePerStream(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatalf("counting open files needs /proc: %v", err)
		}
		return len(ents)
	}
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	const streams = 200
	for i := range streams {
		mustCommit(t, s, fmt.Sprint("s", i), bigCfg(i), 0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := fds()
	s = open(t, path)
	if got := len(blobs(t, path)); got != streams {
		t.Fatalf("%d record files, want %d", got, streams)
	}
	if held := fds() - before; held > 4 {
		t.Fatalf("Open of %d streams holds %d more files open, want a few (the bbolt file)", streams, held)
	}
	if got := storetest.Get(t, s, "s199"); !bytes.Equal(got.Raw, bigCfg(199)) {
		t.Fatal("s199 not loaded")
	}
}

// A retained generation whose record file is missing is an I/O error
// naming the file, not a generation reported as dropped.
func TestMissingRetainedRecordIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := open(t, path)
	mustCommit(t, s, "default", bigCfg(1), 0)
	first := blobs(t, path)[0]
	mustCommit(t, s, "default", bigCfg(2), 0)
	if err := os.Remove(filepath.Join(path+".blobs", first)); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetGeneration(context.Background(), "default", 1)
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, store.ErrNotRetained) || !strings.Contains(err.Error(), first) {
		t.Fatalf("GetGeneration of a generation whose file is gone: %v, want ENOENT naming %s", err, first)
	}
}
