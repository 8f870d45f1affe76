package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/test/storetest"
)

// These tests stop the store between two steps of a commit and open what
// is on disk at that point, as kill -9 there would leave it: a copy of the
// data dir taken while the store is held at that step.

func openT(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// snapshot copies the store file and its record directory to a new dir and
// returns the copy's store path.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "confighub.db")
	copyFile(t, path, dst)
	if _, err := os.Stat(logPathFor(path)); err == nil {
		copyFile(t, logPathFor(path), logPathFor(dst))
	}
	if err := os.Mkdir(dst+".blobs", 0o750); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(path + ".blobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(t, filepath.Join(path+".blobs", e.Name()), filepath.Join(dst+".blobs", e.Name()))
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

// holdIndex makes s's index writer wait until the returned func is called
// (also at cleanup).
func holdIndex(t *testing.T, s *Store) (release func()) {
	t.Helper()
	ch := make(chan struct{})
	s.hookIndex = func() { <-ch }
	var done bool
	release = func() {
		if !done {
			done = true
			close(ch)
		}
	}
	t.Cleanup(release)
	return release
}

func commitT(t *testing.T, s *Store, st *config.Config, expected uint64) *config.Config {
	t.Helper()
	out, _, err := s.CommitConfig(context.Background(), st, expected)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// indexGen reads the generation the bbolt index holds for stream in the
// store file at path (0 when absent).
func indexGen(t *testing.T, path, stream string) uint64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var m streamMeta
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketStreams).Bucket([]byte(stream))
		if b == nil {
			return nil
		}
		return json.Unmarshal(b.Get(keyMeta), &m)
	})
	if err != nil {
		t.Fatal(err)
	}
	return m.Generation
}

// records lists the valid records in a store's directory by generation.
func records(t *testing.T, path string) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	for file, m := range recordMetas(t, path) {
		out[m.Generation] = file
	}
	return out
}

// recordMetas lists the valid records in a store's directory: their
// metas by file.
func recordMetas(t *testing.T, path string) map[string]streamMeta {
	t.Helper()
	ents, err := os.ReadDir(path + ".blobs")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]streamMeta{}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(path+".blobs", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if m, _, err := readRec(f); err == nil {
			out[f.Name()] = m
		}
		_ = f.Close()
	}
	return out
}

func files(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir(path + ".blobs")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func labelled(raw []byte, i int) *config.Config {
	return config.New("default", 0, config.Hash(raw), config.FormatYAML, raw, nil,
		map[string]string{"push": fmt.Sprint(i)}, time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC))
}

// kill -9 after the ack (the record flushed), before the bbolt index names
// it: the next Open replays the record, with every field, and the index
// catches up; generations and expected_generation go on from it.
func TestCrashAfterAckBeforeIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	commitT(t, s, labelled(storetest.Cfg(1), 1), 0)
	s.WaitRemoved()
	holdIndex(t, s)
	acked := commitT(t, s, labelled(storetest.Cfg(2), 2), 1)
	crash := snapshot(t, path)
	if g := indexGen(t, crash, "default"); g != 1 {
		t.Fatalf("index at generation %d in the snapshot, want 1 (not yet indexed)", g)
	}
	for i := range 2 { // replay is idempotent: open, close, open
		s2, err := Open(crash)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s2.GetStream(context.Background(), "default")
		if err != nil || got.Generation != 2 || got.Hash != acked.Hash || !bytes.Equal(got.Raw, storetest.Cfg(2)) ||
			got.Labels["push"] != "2" || !got.AcceptTime.Equal(acked.AcceptTime) || got.Format != config.FormatYAML {
			t.Fatalf("open %d after the crash: %+v, %v; acked generation 2 %+v", i, got, err, acked)
		}
		if i == 1 {
			if _, _, err := s2.CommitConfig(context.Background(), labelled(storetest.Cfg(3), 3), 1); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("expected_generation 1 after replay of 2: %v, want a conflict", err)
			}
			if g := commitT(t, s2, labelled(storetest.Cfg(3), 3), 2).Generation; g != 3 {
				t.Fatalf("next generation %d, want 3", g)
			}
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
		if g := indexGen(t, crash, "default"); g != uint64(2+i) {
			t.Fatalf("index at %d after open %d, want %d", g, i, 2+i)
		}
		if n := files(t, crash); i == 0 && n != 1 {
			t.Fatalf("%d files after reopen, want 1", n)
		}
	}
}

// A record torn by a crash (its flush never returned, so it was never
// acked) is not replayed: the previous generation stays, the file goes,
// and the generation is handed out again.
func TestCrashTornRecordIsDropped(t *testing.T) {
	for name, tear := range map[string]func(b []byte) []byte{
		"config byte": func(b []byte) []byte { b[recDataOff+7] ^= 0x20; return b },
		"header crc":  func(b []byte) []byte { b[21] ^= 1; return b },
		"no header":   func(b []byte) []byte { clear(b[:recHdrLen]); return b },
		"meta cut":    func(b []byte) []byte { return b[:len(b)-2] },
		"config cut":  func(b []byte) []byte { return b[:recDataOff+3] },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := openT(t, path)
			first := commitT(t, s, labelled(storetest.Cfg(1), 1), 0)
			s.WaitRemoved()
			holdIndex(t, s)
			commitT(t, s, labelled(storetest.Cfg(2), 2), 1)
			crash := snapshot(t, path)
			rec := records(t, crash)[2]
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rec, tear(b), 0o600); err != nil {
				t.Fatal(err)
			}
			s2 := openT(t, crash)
			if got := storetest.Get(t, s2, "default"); got.Generation != 1 || got.Hash != first.Hash {
				t.Fatalf("after a torn record: gen %d; want generation 1", got.Generation)
			}
			if _, err := os.Stat(rec); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("torn record kept: %v", err)
			}
			if g := commitT(t, s2, labelled(storetest.Cfg(4), 4), 1).Generation; g != 2 {
				t.Fatalf("next generation %d, want 2", g)
			}
		})
	}
}

// Two records newer than the index, the newest torn: the other one wins.
func TestCrashNewestTornOlderReplayed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	commitT(t, s, labelled(storetest.Cfg(1), 1), 0)
	s.WaitRemoved()
	holdIndex(t, s)
	second := commitT(t, s, labelled(storetest.Cfg(2), 2), 1)
	commitT(t, s, labelled(storetest.Cfg(3), 3), 2)
	crash := snapshot(t, path)
	if err := os.Truncate(records(t, crash)[3], recDataOff+10); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, crash)
	if got := storetest.Get(t, s2, "default"); got.Generation != 2 || got.Hash != second.Hash {
		t.Fatalf("gen %d; want generation 2", got.Generation)
	}
	if n := files(t, crash); n != 1 {
		t.Fatalf("%d files, want 1", n)
	}
}

// kill -9 while a recycled file is being staged into: it holds a stale,
// valid record of an older generation (here even the same bytes again), or
// (from deferMax on: a smaller stage writes nothing) a stale header over
// new bytes. Neither is replayed.
func TestCrashWhileStagingIntoRecycledFile(t *testing.T) {
	for _, rs := range recordSizes {
		for _, again := range []bool{false, true} {
			t.Run(fmt.Sprint(rs.name, " same bytes ", again), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "confighub.db")
				s := openT(t, path)
				for i := 1; i <= 3; i++ {
					commitT(t, s, labelled(big(i, rs.size), i), 0)
					s.WaitRemoved()
				}
				// The pool's newest file is generation 2's.
				raw := bytes.Repeat([]byte("x"), rs.size+9000)
				if again {
					raw = big(2, rs.size)
				}
				if _, err := s.StageConfig(context.Background(), "default", raw, nil); err != nil {
					t.Fatal(err)
				}
				crash := snapshot(t, path)
				_, stale := records(t, crash)[2]
				if again && !stale {
					t.Fatal("the staged file does not hold a valid stale record: test does not test")
				}
				if !again && rs.size >= deferMax && stale {
					t.Fatal("the stale record is whole: no new bytes under its header, test does not test")
				}
				s2 := openT(t, crash)
				if got := storetest.Get(t, s2, "default"); got.Generation != 3 || !bytes.Equal(got.Raw, big(3, rs.size)) {
					t.Fatalf("gen %d; want generation 3", got.Generation)
				}
				if n := files(t, crash); n != 1 {
					t.Fatalf("%d files, want 1", n)
				}
			})
		}
	}
}

// A commit whose write or flush fails may or may not be on disk: the store
// refuses every later stage and commit, and the next Open decides. Below
// deferMax the failed write is the flusher's (the whole record), from it
// on the commit's (meta and header over the staged bytes).
func TestFailedSealStopsCommits(t *testing.T) {
	for _, rs := range recordSizes {
		t.Run(rs.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := openT(t, path)
			commitT(t, s, labelled(big(1, rs.size), 1), 0)
			g, err := s.StageConfig(context.Background(), "default", big(2, rs.size), nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = g.(*staged).f.Close() // the write of the header fails
			if _, _, err := g.Commit(context.Background(), labelled(big(2, rs.size), 2), 0); err == nil {
				t.Fatal("commit with a failed write succeeded")
			}
			if _, _, err := s.CommitConfig(context.Background(), labelled(big(3, rs.size), 3), 0); err == nil || !bytes.Contains([]byte(err.Error()), []byte("restart")) {
				t.Fatalf("commit after a failed one: %v, want refused", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := openT(t, path)
			if got := storetest.Get(t, s2, "default"); got.Generation != 1 {
				t.Fatalf("after reopen: gen %d", got.Generation)
			}
			if g := commitT(t, s2, labelled(big(3, rs.size), 3), 1).Generation; g != 2 {
				t.Fatalf("next generation %d, want 2", g)
			}
		})
	}
}

// A layout 2 store (plain config files named by the bbolt meta) opens, is
// moved to records (layout 3), and a crash in the middle of that move (a
// record of the same generation written, the index not yet changed) is
// redone.
func TestLayout2Moves(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		t.Run(fmt.Sprint("interrupted ", interrupted), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			raw := storetest.Cfg(7)
			blob := "0123456789abcdef0123456789abcdef.cfg"
			m := streamMeta{Generation: 4, Hash: config.Hash(raw), Format: "json", Size: len(raw),
				Labels: map[string]string{"a": "b"}, AcceptTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Blob: blob}
			if err := os.MkdirAll(path+".blobs", 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(path+".blobs", blob), raw, 0o600); err != nil {
				t.Fatal(err)
			}
			if interrupted {
				f, err := os.Create(filepath.Join(path+".blobs", "ffffffffffffffffffffffffffffffff.rec"))
				if err != nil {
					t.Fatal(err)
				}
				half := m
				half.Stream = "default"
				if err := writeData(context.Background(), f, raw, io.Discard); err != nil {
					t.Fatal(err)
				}
				if err := sealRec(f, half); err != nil {
					t.Fatal(err)
				}
				_ = f.Close()
			}
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			meta, _ := json.Marshal(m)
			err = db.Update(func(tx *bbolt.Tx) error {
				for _, b := range [][]byte{bucketInfo, bucketStreams, bucketSinks, bucketApplied} {
					if _, err := tx.CreateBucket(b); err != nil {
						return err
					}
				}
				if err := tx.Bucket(bucketInfo).Put(keyLayout, []byte(layoutV2)); err != nil {
					return err
				}
				st, err := tx.Bucket(bucketStreams).CreateBucket([]byte("default"))
				if err != nil {
					return err
				}
				return st.Put(keyMeta, meta)
			})
			if cerr := db.Close(); err != nil || cerr != nil {
				t.Fatal(err, cerr)
			}
			for range 2 {
				s := openT(t, path)
				got, err := s.GetStream(context.Background(), "default")
				if err != nil || got.Generation != 4 || !bytes.Equal(got.Raw, raw) || got.Labels["a"] != "b" {
					t.Fatalf("layout 2 stream: %+v, %v", got, err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if recs := records(t, path); files(t, path) != 1 || recs[4] == "" {
					t.Fatalf("files after the move: %v (%d files)", recs, files(t, path))
				}
			}
			db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_ = db.View(func(tx *bbolt.Tx) error {
				if v := string(tx.Bucket(bucketInfo).Get(keyLayout)); v != layoutVersion {
					t.Errorf("layout %q after open, want %q", v, layoutVersion)
				}
				return nil
			})
		})
	}
}

// After Close nothing is written: the file lock is free, and another
// process's Open would remove a record file it does not know of (an acked
// push lost). A handle staged before Close cannot commit, and no stage
// starts.
func TestNoWriteAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	first := commitT(t, s, labelled(storetest.Cfg(1), 1), 0)
	g, err := s.StageConfig(context.Background(), "default", storetest.Cfg(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := records(t, path)
	if _, _, err := g.Commit(context.Background(), labelled(storetest.Cfg(2), 2), 0); !errors.Is(err, errClosed) {
		t.Fatalf("commit after Close: %v, want refused", err)
	}
	_ = g.Discard()
	if _, err := s.StageConfig(context.Background(), "default", storetest.Cfg(3), nil); !errors.Is(err, errClosed) {
		t.Fatalf("stage after Close: %v, want refused", err)
	}
	if after := records(t, path); len(after) != len(before) {
		t.Fatalf("records after Close: %v, before: %v", after, before)
	}
	s2 := openT(t, path)
	if got := storetest.Get(t, s2, "default"); got.Generation != 1 || got.Hash != first.Hash {
		t.Fatalf("after reopen: gen %d; want generation 1", got.Generation)
	}
}

// A stream name or label that is not valid UTF-8 is refused: the record's
// JSON meta would hold another name (U+FFFD), so Open could not match the
// record to its stream (the store would not open again) and two such
// streams would replay as one.
func TestNonUTF8Refused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	ctx := context.Background()
	for _, name := range []string{"a\xff", "a\xfe"} {
		if _, _, err := s.CommitConfig(ctx, storetest.NewStream(name, storetest.Cfg(1)), 0); err == nil {
			t.Fatalf("stream %q accepted", name)
		}
	}
	st := labelled(storetest.Cfg(2), 2)
	st = config.New(st.Stream, 0, st.Hash, st.Format, st.Raw, nil, map[string]string{"k": "v\xff"}, st.AcceptTime)
	if _, _, err := s.CommitConfig(ctx, st, 0); err == nil {
		t.Fatal("label value with a bad byte accepted")
	}
	commitT(t, s, labelled(storetest.Cfg(3), 3), 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, path)
	l, err := s2.ListStreams(ctx)
	if err != nil || len(l) != 1 || l[0].Generation != 1 || l[0].Labels["push"] != "3" {
		t.Fatalf("after reopen: %+v, %v; want only the valid stream at generation 1", l, err)
	}
}

// A commit whose fdatasync fails (EIO) is not acked, and the store refuses
// every later stage and commit even once a flush would succeed again: after
// a failed fsync the kernel may have dropped the dirty pages and marked
// them clean, so a later flush proves nothing (fsyncgate). Readers keep
// the last acked generation; the next Open decides from the disk, and
// generations go on from what it found.
func TestFailedFdatasyncStopsCommits(t *testing.T) {
	for _, rs := range recordSizes {
		t.Run(rs.name, func(t *testing.T) {
			failedFdatasyncStopsCommits(t, func(i int) []byte { return big(i, rs.size) })
		})
	}
}

// failedFdatasyncStopsCommits is TestFailedFdatasyncStopsCommits with
// configs made by cfg.
func failedFdatasyncStopsCommits(t *testing.T, cfg func(i int) []byte) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	ctx := context.Background()
	first := commitT(t, s, labelled(cfg(1), 1), 0)
	fails := 1
	s.hookSync = func(f *os.File) error {
		if fails > 0 {
			fails--
			return syscall.EIO
		}
		return fdatasync(f)
	}
	if _, _, err := s.CommitConfig(ctx, labelled(cfg(2), 2), 1); !errors.Is(err, syscall.EIO) {
		t.Fatalf("commit with a failed fdatasync: %v, want EIO", err)
	}
	for i, try := range []func() error{
		func() error { _, err := s.StageConfig(ctx, "default", cfg(3), nil); return err },
		func() error { _, _, err := s.CommitConfig(ctx, labelled(cfg(3), 3), 0); return err },
		func() error {
			_, _, err := s.CommitConfig(ctx, storetest.NewStream("other", cfg(3)), 0)
			return err
		},
	} {
		if err := try(); err == nil || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "restart") {
			t.Fatalf("write %d after a failed flush: %v, want refused (restart, EIO)", i, err)
		}
	}
	if got := storetest.Get(t, s, "default"); got.Generation != 1 || got.Hash != first.Hash {
		t.Fatalf("read after a failed flush: gen %d; want generation 1", got.Generation)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, path)
	got := storetest.Get(t, s2, "default")
	if got.Generation < 1 || got.Generation > 2 {
		t.Fatalf("after reopen: gen %d; want 1 or 2 (2 only if its bytes reached the disk)", got.Generation)
	}
	if g := commitT(t, s2, labelled(cfg(4), 4), got.Generation).Generation; g != got.Generation+1 {
		t.Fatalf("next generation %d after reopen at %d", g, got.Generation)
	}
}

// While the index lags (held here), the file it names is never recycled:
// each commit stages into a pool file (stale records of generations 1 and
// 2) or a new one, never into generation 3's, whose bytes stay as they
// were. A crash after any ack opens at that ack.
func TestIndexedFileNotRecycledWhileIndexLags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	for i := 1; i <= 3; i++ {
		commitT(t, s, labelled(storetest.Cfg(i), i), uint64(i-1))
		s.WaitRemoved()
	}
	indexed := records(t, path)[3]
	keep, err := os.ReadFile(indexed)
	if err != nil {
		t.Fatal(err)
	}
	holdIndex(t, s)
	for i := 4; i <= 4+PoolMax+2; i++ {
		acked := commitT(t, s, labelled(storetest.Cfg(i), i), uint64(i-1))
		if now, err := os.ReadFile(indexed); err != nil || !bytes.Equal(now, keep) {
			t.Fatalf("after generation %d the indexed file changed (%v)", i, err)
		}
		crash := snapshot(t, path)
		if g := indexGen(t, crash, "default"); g != 3 {
			t.Fatalf("index at %d, want 3 (held)", g)
		}
		s2, err := Open(crash)
		if err != nil {
			t.Fatal(err)
		}
		if got := storetest.Get(t, s2, "default"); got.Generation != acked.Generation || got.Hash != acked.Hash {
			t.Fatalf("crash after the ack of %d: gen %d", acked.Generation, got.Generation)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Concurrent pushes to several streams, each a chain of expected
// generations, with the index held: a crash then finds every stream at its
// last ack (records of different streams are told apart by their meta),
// and so does a clean reopen after the index caught up.
func TestCrashConcurrentStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	release := holdIndex(t, s)
	const streams, each = 3, 6
	last := make([]*config.Config, streams)
	errs := make(chan error, streams)
	for w := range streams {
		go func() {
			var err error
			for i := range each {
				st := storetest.NewStream(fmt.Sprint("s", w), storetest.Cfg(w*100+i))
				if last[w], _, err = s.CommitConfig(context.Background(), st, uint64(i)); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, s *Store) {
		t.Helper()
		for w := range streams {
			got := storetest.Get(t, s, fmt.Sprint("s", w))
			if got.Generation != each || got.Hash != last[w].Hash || !bytes.Equal(got.Raw, storetest.Cfg(w*100+each-1)) {
				t.Fatalf("%s: stream s%d gen %d; want its last ack %d", what, w, got.Generation, each)
			}
		}
	}
	crash := snapshot(t, path)
	check("crash with the index held", openT(t, crash))
	release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("reopen", openT(t, path))
}

// big is a config of about n bytes, distinct for each i.
func big(i, n int) []byte {
	return fmt.Appendf(nil, `{"_format_version":"3.0","services":[],"i":%d,"pad":"%s"}`, i, bytes.Repeat([]byte{byte('a' + i%26)}, n))
}

// recordSizes are the two ways a record reaches its file, and the crash
// tests run at both: below deferMax the stage writes nothing and the
// flusher (or, for a record acked through the commit log, the background)
// writes the whole record; from deferMax on the stage writes the bytes and
// the commit the meta and header over them.
var recordSizes = []struct {
	name string
	size int
}{{"deferred", 1 << 10}, {"staged", deferMax + 8<<10}}

// Power loss while a commit into a recycled file was being flushed (never
// acked): the disk may hold any mix of the file's old and new pages, and
// its old or new size. Whatever the mix, Open finds the last ack or the
// new record (only when all of it made it), never the stale record the
// file held before, and never fails.
func TestPowerLossMixesRecycledPages(t *testing.T) {
	for _, again := range []bool{false, true} {
		t.Run(fmt.Sprint("same bytes ", again), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := openT(t, path)
			sizes := []int{0, 30000, 9000, 20000} // generation i is big(i, sizes[i])
			for i := 1; i <= 3; i++ {
				commitT(t, s, labelled(big(i, sizes[i]), i), uint64(i-1))
				s.WaitRemoved()
			}
			holdIndex(t, s)
			before := snapshot(t, path)
			raw := big(4, 25000)
			if again {
				raw = big(1, sizes[1]) // a pool file may hold exactly these bytes, stale
			}
			commitT(t, s, labelled(raw, 4), 3)
			after := snapshot(t, path)
			target := ""
			for g, p := range records(t, after) {
				if g == 4 {
					target = filepath.Base(p)
				}
			}
			old, err := os.ReadFile(filepath.Join(before+".blobs", target))
			if err != nil {
				t.Fatalf("generation 4 was not staged into a pool file: %v", err)
			}
			if g := staleGen(t, filepath.Join(before+".blobs", target)); g == 0 || g >= 3 {
				t.Fatalf("the pool file held no stale record (generation %d): test does not test", g)
			}
			nw, err := os.ReadFile(filepath.Join(after+".blobs", target))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for trial := range 12 {
				size := len(old)
				if trial%2 == 1 {
					size = len(nw)
				}
				mix := make([]byte, size)
				for off := 0; off < size; off += recDataOff {
					src := old
					switch {
					case trial == 0:
					case trial == 1:
						src = nw
					case rng.IntN(2) == 1:
						src = nw
					}
					if off < len(src) {
						copy(mix[off:min(off+recDataOff, size)], src[off:min(off+recDataOff, len(src))])
					}
				}
				crash := snapshot(t, before)
				if err := os.WriteFile(filepath.Join(crash+".blobs", target), mix, 0o600); err != nil {
					t.Fatal(err)
				}
				s2, err := Open(crash)
				if err != nil {
					t.Fatalf("trial %d: Open: %v", trial, err)
				}
				got, err := s2.GetStream(context.Background(), "default")
				ok := err == nil && (got.Generation == 3 && bytes.Equal(got.Raw, big(3, sizes[3])) ||
					got.Generation == 4 && bytes.Equal(got.Raw, raw))
				if !ok {
					t.Fatalf("trial %d: gen %d, %v; want 3 or the whole of 4", trial, got.Generation, err)
				}
				if trial == 1 && got.Generation != 4 {
					t.Fatalf("every new page on disk: gen %d, want 4", got.Generation)
				}
				if err := s2.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// staleGen is the generation of the valid record in the file at p, 0 if
// none.
func staleGen(t *testing.T, p string) uint64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, _, err := readRec(f)
	if err != nil {
		return 0
	}
	return m.Generation
}
