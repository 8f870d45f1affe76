package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/test/storetest"
)

// holdFlusher stops s's flusher before its next batch (a barrier queued
// here) until release is called; queued(n) returns once n commits wait
// behind it, so the next batch holds all of them.
func holdFlusher(t *testing.T, s *Store) (queued func(n int), release func()) {
	t.Helper()
	ch, entered := make(chan struct{}), make(chan struct{})
	var once, closed sync.Once
	s.gcMu.Lock()
	s.hookFlush = func(int) { once.Do(func() { close(entered); <-ch }) }
	s.gcMu.Unlock()
	s.enqueue(&flushReq{done: make(chan error, 1)})
	<-entered
	queued = func(n int) {
		for {
			s.gcMu.Lock()
			k := len(s.gcQueue)
			s.gcMu.Unlock()
			if k >= n {
				return
			}
			runtime.Gosched()
		}
	}
	release = func() { closed.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return queued, release
}

// syncLog records which files s flushes: the commit log or record files.
type syncLog struct {
	mu         sync.Mutex
	log, files int
}

func countSyncs(s *Store) *syncLog {
	c := &syncLog{}
	s.hookSync = func(f *os.File) error {
		c.mu.Lock()
		if strings.HasSuffix(f.Name(), ".log") {
			c.log++
		} else {
			c.files++
		}
		c.mu.Unlock()
		return fdatasync(f)
	}
	return c
}

func (c *syncLog) get() (log, files int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log, c.files
}

// pusher is one concurrent commit and what it got.
type pusher struct {
	st  *config.Config
	got *config.Config
	err error
}

// pushAll commits every stream of ps at once (each with expected) and
// waits for all of them; ready runs once they were started.
func pushAll(s *Store, ps []*pusher, expected func(*pusher) uint64, ready func()) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.got, _, p.err = s.CommitConfig(context.Background(), p.st, expected(p)) })
	}
	ready()
	wg.Wait()
}

func noExpected(*pusher) uint64 { return 0 }

// pushRound commits perStream configs to each stream at once, in one
// batch of the flusher, as round number round of a test whose streams
// were at generation first-1 before round 0; it returns each stream's
// last ack. Configs are made by cfg.
func pushRound(t *testing.T, s *Store, streams []string, perStream, round int, first uint64, cfg func(n int) []byte) map[string]*config.Config {
	t.Helper()
	queued, release := holdFlusher(t, s)
	ps := pushersOf(streams, perStream, 10_000*(round+1), cfg)
	pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
	firsts := map[string]uint64{}
	for _, name := range streams {
		firsts[name] = first + uint64(perStream*round)
	}
	return lastAcked(t, ps, firsts)
}

// pushers returns perStream commits of distinct configs to each stream.
func pushers(streams []string, perStream, seed int) []*pusher {
	return pushersOf(streams, perStream, seed, storetest.Cfg)
}

// pushersOf is pushers with configs made by cfg (distinct for each n).
func pushersOf(streams []string, perStream, seed int, cfg func(n int) []byte) []*pusher {
	var ps []*pusher
	for i, name := range streams {
		for j := range perStream {
			ps = append(ps, &pusher{st: storetest.NewStream(name, cfg(seed+i*1000+j))})
		}
	}
	return ps
}

// lastAcked is, per stream, the acked commit with the highest generation;
// it also checks that the acked generations of each stream are distinct
// and contiguous from first.
func lastAcked(t *testing.T, ps []*pusher, first map[string]uint64) map[string]*config.Config {
	t.Helper()
	gens := map[string]map[uint64]bool{}
	last := map[string]*config.Config{}
	for _, p := range ps {
		if p.err != nil {
			t.Fatalf("commit to %s: %v", p.st.Stream, p.err)
		}
		if gens[p.st.Stream] == nil {
			gens[p.st.Stream] = map[uint64]bool{}
		}
		if gens[p.st.Stream][p.got.Generation] {
			t.Fatalf("stream %s: generation %d acked twice", p.st.Stream, p.got.Generation)
		}
		gens[p.st.Stream][p.got.Generation] = true
		if l := last[p.st.Stream]; l == nil || p.got.Generation > l.Generation {
			last[p.st.Stream] = p.got
		}
	}
	for name, g := range gens {
		for i := first[name]; i < first[name]+uint64(len(g)); i++ {
			if !g[i] {
				t.Fatalf("stream %s: generations %v skip %d", name, g, i)
			}
		}
	}
	return last
}

// checkAt opens path and checks every stream is at want (generation,
// hash, bytes).
func checkAt(t *testing.T, what, path string, want map[string]*config.Config) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Fatalf("%s: Close: %v", what, err)
		}
	}()
	for name, w := range want {
		got, err := s.GetStream(context.Background(), name)
		if err != nil {
			t.Fatalf("%s: stream %s: %v, want its last ack %d", what, name, err, w.Generation)
		}
		if got.Generation != w.Generation || got.Hash != w.Hash || !bytes.Equal(got.Raw, w.Raw) {
			t.Fatalf("%s: stream %s at generation %d, want its last ack %d", what, name, got.Generation, w.Generation)
		}
	}
}

// Concurrent commits, to one stream and to several, that reach the
// flusher together are made durable by one fdatasync (of the commit log),
// get distinct contiguous generations, and each is acked; readers see the
// newest.
func TestGroupCommitSharesOneFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	holdIndex(t, s) // the background's own flushes stay out of the count
	queued, release := holdFlusher(t, s)
	syncs := countSyncs(s)
	ps := pushers([]string{"default", "a", "b", "c"}, 8, 0)
	pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
	last := lastAcked(t, ps, map[string]uint64{"default": 1, "a": 1, "b": 1, "c": 1})
	if l, f := syncs.get(); l != 1 || f != 0 {
		t.Fatalf("%d commits made %d log and %d record flushes, want one log flush", len(ps), l, f)
	}
	for name, w := range last {
		if got := storetest.Get(t, s, name); got.Generation != 8 || got.Hash != w.Hash {
			t.Fatalf("stream %s: gen %d; want 8 (its last ack)", name, got.Generation)
		}
	}
}

// Many pushers at once on one stream with expected_generation set to the
// stream's generation: exactly one wins each round, the others get
// ErrConflict and store nothing; the winner's generation is the next.
func TestGroupCommitExpectedGeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	commitT(t, s, storetest.NewStream("default", storetest.Cfg(-1)), 0)
	for round := 1; round <= 4; round++ {
		queued, release := holdFlusher(t, s)
		ps := pushers([]string{"default"}, 8, round*100)
		pushAll(s, ps, func(*pusher) uint64 { return uint64(round) }, func() {
			// one commit is sealed and queued, the others already refused
			queued(1)
			release()
		})
		won := 0
		for _, p := range ps {
			switch {
			case p.err == nil:
				won++
				if p.got.Generation != uint64(round+1) {
					t.Fatalf("round %d: winner got generation %d", round, p.got.Generation)
				}
			case !errors.Is(p.err, store.ErrConflict):
				t.Fatalf("round %d: %v, want a conflict", round, p.err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d commits won, want 1", round, won)
		}
	}
}

// A crash after concurrent pushers were acked through the commit log,
// before the index or the records' own files were flushed: with the
// record files as written (kill -9: below deferMax not written at all,
// from it on written but not flushed) or with every record file newer
// than the index lost (power loss: only the log was flushed), Open finds
// each stream at its last ack. Then pushes go on from there.
func TestCrashConcurrentPushersGroupCommit(t *testing.T) {
	for _, rs := range recordSizes {
		t.Run(rs.name, func(t *testing.T) { crashConcurrentPushers(t, rs.size) })
	}
}

// crashConcurrentPushers is TestCrashConcurrentPushersGroupCommit with
// configs of about size bytes.
func crashConcurrentPushers(t *testing.T, size int) {
	cfg := func(n int) []byte { return big(n, size) }
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	streams := []string{"default", "a", "b"}
	for _, name := range streams {
		commitT(t, s, storetest.NewStream(name, cfg(len(name))), 0)
	}
	s.WaitRemoved()
	indexed := map[string]bool{}
	ents, err := os.ReadDir(path + ".blobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if staleGen(t, filepath.Join(path+".blobs", e.Name())) > 0 {
			indexed[e.Name()] = true
		}
	}
	holdIndex(t, s)
	var last map[string]*config.Config
	for round := range 3 {
		last = pushRound(t, s, streams, 6, round, 2, cfg)
	}
	kill := snapshot(t, path)
	power := snapshot(t, path)
	ents, err = os.ReadDir(power + ".blobs")
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, e := range ents {
		if !indexed[e.Name()] {
			// never flushed on its own: the power loss took its pages
			if err := os.WriteFile(filepath.Join(power+".blobs", e.Name()), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no record newer than the index: test does not test")
	}
	checkAt(t, "kill -9", kill, last)
	checkAt(t, "power loss", power, last)
	s2 := openT(t, power)
	ps := pushersOf(streams, 4, 99_000, cfg)
	pushAll(s2, ps, noExpected, func() {})
	first := map[string]uint64{}
	for name, w := range last {
		first[name] = w.Generation + 1
	}
	lastAcked(t, ps, first)
}

// A batch torn in the commit log (power loss during its flush: never
// acked) is dropped at Open; the batch before it, acked, is replayed.
func TestCrashTornLogBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	holdIndex(t, s)
	queued, release := holdFlusher(t, s)
	ps := pushers([]string{"default", "a"}, 3, 0)
	pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
	acked := lastAcked(t, ps, map[string]uint64{"default": 1, "a": 1})
	logSize := func() int64 {
		fi, err := os.Stat(logPathFor(path))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	firstEnd := logSize()
	// The next batch is held in its log flush: written, not acked.
	flushing, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.hookSync = func(f *os.File) error {
		if strings.HasSuffix(f.Name(), ".log") {
			once.Do(func() { close(flushing); <-unblock })
		}
		return fdatasync(f)
	}
	queued, release = holdFlusher(t, s)
	ps = pushers([]string{"default", "a"}, 3, 500)
	done := make(chan struct{})
	go func() {
		pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
		close(done)
	}()
	<-flushing
	crash := snapshot(t, path)
	close(unblock)
	<-done
	if logSize() <= firstEnd {
		t.Fatal("the second batch did not go through the log: test does not test")
	}
	// Cut inside the batch's first entry: none of it is read. Cut in its
	// last entry: the entries before it read back whole and may be
	// replayed (never acked, like a whole record file of a torn commit),
	// with the bytes that generation was committed with.
	whole := map[string]map[uint64][]byte{}
	for _, p := range ps {
		if whole[p.st.Stream] == nil {
			whole[p.st.Stream] = map[uint64][]byte{}
		}
		whole[p.st.Stream][p.got.Generation] = p.st.Raw
	}
	for _, cut := range []int64{firstEnd + 10, firstEnd + entHdrLen + 5, logSize() - 1} {
		t.Run(fmt.Sprint("cut at ", cut), func(t *testing.T) {
			torn := snapshot(t, crash)
			if err := os.Truncate(logPathFor(torn), cut); err != nil {
				t.Fatal(err)
			}
			// and the unacked batch's record files never reached the disk
			ents, err := os.ReadDir(torn + ".blobs")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if g := staleGen(t, filepath.Join(torn+".blobs", e.Name())); g > 3 {
					_ = os.Remove(filepath.Join(torn+".blobs", e.Name()))
				}
			}
			if cut < logSize()-1 {
				checkAt(t, "torn batch", torn, acked)
				return
			}
			s2 := openT(t, torn)
			for name, w := range acked {
				got, err := s2.GetStream(context.Background(), name)
				ok := err == nil && (got.Generation == w.Generation && bytes.Equal(got.Raw, w.Raw) ||
					got.Generation > w.Generation && bytes.Equal(got.Raw, whole[name][got.Generation]))
				if !ok {
					t.Fatalf("stream %s at generation %d (%v): want its last ack %d or a whole record of the torn batch", name, got.Generation, err, w.Generation)
				}
			}
		})
	}
}

// A failed flush of the commit log fails every commit of the batch and
// every later one (fsyncgate: no retry into an ack); the next Open finds
// each stream at its last ack or, only if a record reads back whole, one
// of the unacked ones.
func TestGroupCommitFailedLogFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	for _, name := range []string{"default", "a"} {
		commitT(t, s, storetest.NewStream(name, storetest.Cfg(len(name))), 0)
	}
	s.hookSync = func(f *os.File) error {
		if strings.HasSuffix(f.Name(), ".log") {
			return syscall.EIO
		}
		return fdatasync(f)
	}
	queued, release := holdFlusher(t, s)
	ps := pushers([]string{"default", "a"}, 4, 700)
	pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
	for _, p := range ps {
		if !errors.Is(p.err, syscall.EIO) {
			t.Fatalf("commit in a failed batch: %v, want EIO", p.err)
		}
	}
	if _, _, err := s.CommitConfig(context.Background(), storetest.NewStream("a", storetest.Cfg(9999)), 0); err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("commit after a failed flush: %v, want refused", err)
	}
	if got := storetest.Get(t, s, "default"); got.Generation != 1 {
		t.Fatalf("read after a failed flush: gen %d; want the last ack, 1", got.Generation)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, path)
	for _, name := range []string{"default", "a"} {
		if got := storetest.Get(t, s2, name); got.Generation < 1 || got.Generation > 5 {
			t.Fatalf("stream %s after reopen: gen %d; want 1..5", name, got.Generation)
		}
	}
}

// A record acked through the commit log is flushed in its own file before
// the index names it (the log is reused once the index covers it), whether
// the background writes the record there first (below deferMax) or its
// stage did. When that flush fails the store refuses every later commit,
// and the index never names the record, not even once a later flush
// succeeds (fsyncgate: the pages may be lost, and a later flush proves
// nothing): a power loss then, every record file newer than the index
// lost, opens at each stream's last ack, replayed from the log.
func TestLoggedRecordFlushFails(t *testing.T) {
	for _, rs := range recordSizes {
		t.Run(rs.name, func(t *testing.T) {
			cfg := func(n int) []byte { return big(n, rs.size) }
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := openT(t, path)
			streams := []string{"default", "a"}
			for _, name := range streams {
				commitT(t, s, storetest.NewStream(name, cfg(len(name))), 0)
			}
			s.WaitRemoved()
			indexed := BlobNames(t, path)
			var recovered atomic.Bool
			s.hookSync = func(f *os.File) error {
				if strings.HasSuffix(f.Name(), ".log") || recovered.Load() {
					return fdatasync(f)
				}
				return syscall.EIO // a record file's flush, until recovered
			}
			last := pushRound(t, s, streams, 4, 0, 2, cfg)
			s.WaitRemoved()
			if _, _, err := s.CommitConfig(context.Background(), storetest.NewStream("a", cfg(9999)), 0); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "restart") {
				t.Fatalf("commit after a logged record's flush failed: %v, want refused (restart, EIO)", err)
			}
			recovered.Store(true)
			s.WaitRemoved() // the background runs again; its flushes succeed now
			if g := indexGen(t, snapshot(t, path), "a"); g != 1 {
				t.Fatalf("index at %d, want 1: it names a record whose flush failed", g)
			}
			if err := s.Close(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Close: %v, want the failed flush", err)
			}
			power := snapshot(t, path)
			for _, name := range BlobNames(t, power) {
				if !slices.Contains(indexed, name) {
					if err := os.WriteFile(filepath.Join(power+".blobs", name), nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			checkAt(t, "power loss", power, last)
			checkAt(t, "reopen", path, last)
		})
	}
}

// The log starts a new epoch once the index covers its entries, and a
// crash after that replays the new epoch's entries only.
func TestCommitLogWrapsAround(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	first := s.clog.epoch
	const size = 200 << 10
	n := 0
	var last map[string]*config.Config
	for s.clog.epoch == first || n < 4 {
		queued, release := holdFlusher(t, s)
		ps := []*pusher{
			{st: storetest.NewStream("default", big(n, size))},
			{st: storetest.NewStream("a", big(n+1, size))},
		}
		pushAll(s, ps, noExpected, func() { queued(2); release() })
		last = lastAcked(t, ps, map[string]uint64{"default": uint64(n/2 + 1), "a": uint64(n/2 + 1)})
		s.WaitRemoved()
		n += 2
		if n > 4*logCap/size {
			t.Fatalf("the log never started a new epoch after %d records", n)
		}
	}
	holdIndex(t, s)
	queued, release := holdFlusher(t, s)
	ps := pushers([]string{"default", "a"}, 2, 123)
	pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
	for name, w := range lastAcked(t, ps, map[string]uint64{"default": last["default"].Generation + 1, "a": last["a"].Generation + 1}) {
		last[name] = w
	}
	checkAt(t, "crash after the log wrapped", snapshot(t, path), last)
}

// Rounds of 32 concurrent pushes (one batch each, on one stream or spread
// over 16) reuse the record files of the rounds before: once the pool has
// grown to what a round takes out of it (its stages, then the files their
// commits replaced until the index passes them), no round creates a file
// (nor flushes the directory for it) or removes one.
func TestConcurrentPushesReuseFiles(t *testing.T) {
	for _, streams := range []int{1, 16} {
		t.Run(fmt.Sprintf("streams=%d", streams), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "confighub.db")
			s := openT(t, path)
			var names []string
			for i := range 16 {
				names = append(names, fmt.Sprintf("s%02d", i))
			}
			var files []string
			for round := range 5 {
				queued, release := holdFlusher(t, s)
				ps := pushers(names[:streams], 32/streams, round*10000)
				pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
				for _, p := range ps {
					if p.err != nil {
						t.Fatalf("round %d: %v", round, p.err)
					}
				}
				s.WaitRemoved()
				got := BlobNames(t, path)
				if round >= 3 && !slices.Equal(got, files) {
					t.Fatalf("round %d changed the record files: %d before, %d after (%d new)", round, len(files), len(got), len(slices.DeleteFunc(slices.Clone(got), func(n string) bool { return slices.Contains(files, n) })))
				}
				files = got
			}
		})
	}
}

// Small records acked through the commit log are not written to their
// files on the ack path: readers get the newest one's bytes from memory
// until the background goroutine writes it, before the index names it;
// the generations it replaced meanwhile are never written (their files
// are recycled as they were).
func TestLoggedRecordsWrittenByBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s := openT(t, path)
	releaseIndex := holdIndex(t, s)
	queued, release := holdFlusher(t, s)
	ps := pushers([]string{"default", "a"}, 8, 0)
	pushAll(s, ps, noExpected, func() { queued(len(ps)); release() })
	last := lastAcked(t, ps, map[string]uint64{"default": 1, "a": 1})
	onDisk := func() []string {
		var out []string
		for _, m := range recordMetas(t, path) {
			out = append(out, fmt.Sprintf("%s/%d", m.Stream, m.Generation))
		}
		slices.Sort(out)
		return out
	}
	read := func(when string) {
		for name, w := range last {
			if got := storetest.Get(t, s, name); got.Generation != w.Generation || got.Hash != w.Hash || !bytes.Equal(got.Raw, w.Raw) {
				t.Fatalf("%s: stream %s read generation %d, want its last ack %d", when, name, got.Generation, w.Generation)
			}
		}
		l, err := s.ListStreams(context.Background())
		if err != nil || len(l) != 2 || !bytes.Equal(l[0].Raw, last["a"].Raw) || !bytes.Equal(l[1].Raw, last["default"].Raw) {
			t.Fatalf("%s: ListStreams %v, %v", when, l, err)
		}
	}
	if got := onDisk(); len(got) != 0 {
		t.Fatalf("records in their files before the background ran: %v", got)
	}
	read("before the background wrote them")
	releaseIndex()
	s.WaitRemoved()
	if got, want := onDisk(), []string{"a/8", "default/8"}; !slices.Equal(got, want) {
		t.Fatalf("records in their files after the background ran: %v, want %v", got, want)
	}
	read("after")
	if g := indexGen(t, snapshot(t, path), "a"); g != 8 {
		t.Fatalf("index at %d, want 8", g)
	}
}
