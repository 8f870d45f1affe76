package bolt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/storetest"
)

// openClocked opens a store at path on a fake clock (closed at cleanup).
func openClocked(t *testing.T, path string) (*Store, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClock()
	s, err := Open(path, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

// The index follows the acks within indexDelay, or at once when
// indexLag records wait, not after every commit.
func TestIndexTrailsByDelayOrLag(t *testing.T) {
	// A bound for a broken background, not a synchronisation: the wait
	// below returns as soon as its timer is set.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "confighub.db")
	s, clock := openClocked(t, path)
	s.bgMu.Lock()
	s.idxLag = 4
	s.bgMu.Unlock()
	commitT(t, s, storetest.NewStream("a", storetest.Cfg(1)), 0)
	if err := clock.BlockUntilContext(ctx, 1); err != nil { // the background's timer
		t.Fatal(err)
	}
	if g := indexGen(t, snapshot(t, path), "a"); g != 0 {
		t.Fatalf("index at %d before indexDelay, want none", g)
	}
	clock.Advance(indexDelay)
	s.waitIdle()
	if g := indexGen(t, snapshot(t, path), "a"); g != 1 {
		t.Fatalf("index at %d after indexDelay, want 1", g)
	}
	for i := 2; i <= 5; i++ { // the fourth since the last index makes it due
		commitT(t, s, storetest.NewStream("a", storetest.Cfg(i)), 0)
	}
	s.waitIdle()
	if g := indexGen(t, snapshot(t, path), "a"); g != 5 {
		t.Fatalf("index at %d after %d records, want 5 without the clock moving", g, s.idxLag)
	}
}

// Rounds of concurrent pushes through the commit log while the index
// does not move (its delay never passes, its lag is not reached) reuse
// the files of the generations they replaced, which were never written;
// a crash then (kill -9, or power loss: every record file lost, as none
// was flushed on its own) opens at each stream's last ack, whatever
// generation of which stream a reused file held in the log.
func TestEarlyRecycledFilesCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	s, _ := openClocked(t, path)
	streams := []string{"default", "a"}
	var last map[string]*config.Config
	sizes := map[int]int{}
	for round := range 8 {
		last = pushRound(t, s, streams, 8, round, 1, storetest.Cfg)
		sizes[round] = files(t, path)
	}
	if g := indexGen(t, snapshot(t, path), "default"); g != 0 {
		t.Fatalf("index at %d: the test needs it unwritten", g)
	}
	if sizes[7] != sizes[3] {
		t.Fatalf("record files by round %v: later rounds did not reuse the replaced ones", sizes)
	}
	kill := snapshot(t, path)
	power := snapshot(t, path)
	for _, name := range BlobNames(t, power) {
		if err := os.WriteFile(filepath.Join(power+".blobs", name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	checkAt(t, "kill -9", kill, last)
	checkAt(t, "power loss", power, last)
	for name, w := range last {
		if got := storetest.Get(t, s, name); got.Generation != w.Generation {
			t.Fatalf("stream %s reads %d, want %d", name, got.Generation, w.Generation)
		}
	}
}
