package statustest

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

// Options are the view settings a subtest needs; 0 means the default.
type Options struct {
	// WatchBuffer is each watcher's channel capacity.
	WatchBuffer int
	// History is how many changes per stream are kept for resuming.
	History int
}

// Backend is one view under test and the way to change what it shows.
type Backend interface {
	status.View
	PutSink(st *confighubv1.SinkStatus)
	RemoveSink(stream, sink string)
	PutGeneration(stream string, g *confighubv1.GenerationStatus)
	// Sync returns once every change made so far is visible in the view
	// (as its own revision: a backend may coalesce changes made between
	// two Syncs).
	Sync(t *testing.T)
}

// Run runs the conformance suite; newBackend returns a fresh, empty backend
// and registers its own cleanup.
func Run(t *testing.T, newBackend func(t *testing.T, o Options) Backend) {
	t.Run("RevisionsIncrease", func(t *testing.T) { testRevisions(t, newBackend(t, Options{})) })
	t.Run("SnapshotIsConsistent", func(t *testing.T) { testSnapshot(t, newBackend(t, Options{})) })
	t.Run("WatchSendsSnapshotThenChanges", func(t *testing.T) { testWatch(t, newBackend(t, Options{})) })
	t.Run("WatchResumesFromRevision", func(t *testing.T) { testResume(t, newBackend(t, Options{})) })
	t.Run("WatchResumeGap", func(t *testing.T) { testResumeGap(t, newBackend(t, Options{History: 4})) })
	t.Run("SlowWatcherIsCutOver", func(t *testing.T) { testSlowWatcher(t, newBackend(t, Options{WatchBuffer: 4})) })
	t.Run("WatchClosesOnCancel", func(t *testing.T) { testCancel(t, newBackend(t, Options{})) })
}

// SinkStatus is a status of sink name on stream "s".
func SinkStatus(name string, applied uint64) *confighubv1.SinkStatus {
	return &confighubv1.SinkStatus{Sink: name, Stream: "s", Kind: "test", AppliedGeneration: applied}
}

// Recv returns the next message of ch, failing the test after 10 s or when
// ch is closed.
func Recv(t *testing.T, ch <-chan *confighubv1.WatchStatusResponse) *confighubv1.WatchStatusResponse {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

func watch(t *testing.T, v status.View, from uint64) <-chan *confighubv1.WatchStatusResponse {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return v.Watch(ctx, "s", from)
}

func testRevisions(t *testing.T, b Backend) {
	ch := watch(t, b, 0)
	last := Recv(t, ch).GetRevision()
	for i := uint64(1); i <= 5; i++ {
		b.PutSink(SinkStatus("a", i))
		b.Sync(t)
		b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: i})
		b.Sync(t)
		for range 2 {
			ev := Recv(t, ch)
			if ev.GetRevision() <= last {
				t.Fatalf("revision %d after %d", ev.GetRevision(), last)
			}
			last = ev.GetRevision()
		}
	}
	if snap, _ := b.Snapshot("s"); snap.GetRevision() != last {
		t.Fatalf("snapshot revision %d, want the last change's %d", snap.GetRevision(), last)
	}
}

func testSnapshot(t *testing.T, b Backend) {
	if _, ok := b.Snapshot("s"); ok {
		t.Fatal("snapshot of an unknown stream")
	}
	b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 1, Hash: "h1"})
	b.PutSink(SinkStatus("b", 1))
	b.PutSink(SinkStatus("a", 1))
	b.PutSink(SinkStatus("c", 1))
	b.Sync(t)
	b.RemoveSink("s", "c")
	b.Sync(t)
	snap, ok := b.Snapshot("s")
	if !ok || snap.GetGeneration() != 1 || snap.GetHash() != "h1" {
		t.Fatalf("snapshot %v", snap)
	}
	if len(snap.GetSinks()) != 2 || snap.GetSinks()[0].GetSink() != "a" || snap.GetSinks()[1].GetSink() != "b" {
		t.Fatalf("sinks %v, want a, b sorted", snap.GetSinks())
	}
	// A watch from the snapshot's revision gets exactly the later changes.
	ch := watch(t, b, snap.GetRevision())
	b.PutSink(SinkStatus("a", 2))
	b.Sync(t)
	if ev := Recv(t, ch); ev.GetSink().GetAppliedGeneration() != 2 || ev.GetRevision() <= snap.GetRevision() {
		t.Fatalf("after the snapshot: %v", ev)
	}
}

func testWatch(t *testing.T, b Backend) {
	b.PutSink(SinkStatus("a", 1))
	b.Sync(t)
	ch := watch(t, b, 0)
	ev := Recv(t, ch)
	if ev.GetSnapshotReason() != status.ReasonStart || len(ev.GetSnapshot().GetSinks()) != 1 {
		t.Fatalf("first event %v", ev)
	}
	b.PutSink(SinkStatus("b", 1))
	b.Sync(t)
	b.PutGeneration("elsewhere", &confighubv1.GenerationStatus{Generation: 9})
	b.Sync(t)
	b.RemoveSink("s", "a")
	b.Sync(t)
	if ev := Recv(t, ch); ev.GetSink().GetSink() != "b" {
		t.Fatalf("second event %v", ev)
	}
	if ev := Recv(t, ch); ev.GetSinkRemoved() != "a" {
		t.Fatalf("third event %v (a change of another stream must not be sent)", ev)
	}
}

// changes puts sink a's applied generations from..to, one visible revision
// each, and returns the revisions as a watcher saw them.
func changes(t *testing.T, b Backend, from, to uint64) []uint64 {
	ch := watch(t, b, 0)
	Recv(t, ch)
	var revs []uint64
	for i := from; i <= to; i++ {
		b.PutSink(SinkStatus("a", i))
		b.Sync(t)
		ev := Recv(t, ch)
		if ev.GetSink().GetAppliedGeneration() != i {
			t.Fatalf("change %d: %v", i, ev)
		}
		revs = append(revs, ev.GetRevision())
	}
	return revs
}

func testResume(t *testing.T, b Backend) {
	revs := changes(t, b, 1, 10)
	ch := watch(t, b, revs[6])
	for want := uint64(8); want <= 10; want++ {
		ev := Recv(t, ch)
		if ev.GetSnapshot() != nil || ev.GetRevision() != revs[want-1] || ev.GetSink().GetAppliedGeneration() != want {
			t.Fatalf("resumed event %v, want change %d at revision %d", ev, want, revs[want-1])
		}
	}
	b.PutSink(SinkStatus("a", 11))
	b.Sync(t)
	if ev := Recv(t, ch); ev.GetSink().GetAppliedGeneration() != 11 {
		t.Fatalf("live event %v", ev)
	}
}

func testResumeGap(t *testing.T, b Backend) {
	revs := changes(t, b, 1, 10)
	// The last 4 changes are kept: from the 6th resumes, from the 5th not.
	if ev := Recv(t, watch(t, b, revs[5])); ev.GetRevision() != revs[6] || ev.GetSnapshot() != nil {
		t.Fatalf("resume from the 6th change: %v", ev)
	}
	for _, from := range []uint64{revs[4], revs[9] + 1<<40} { // too old, and from the future (a restarted hub)
		ev := Recv(t, watch(t, b, from))
		if ev.GetSnapshotReason() != status.ReasonResumeGap || ev.GetRevision() != revs[9] ||
			ev.GetSnapshot().GetSinks()[0].GetAppliedGeneration() != 10 {
			t.Fatalf("resume from %d: %v", from, ev)
		}
	}
}

func testSlowWatcher(t *testing.T, b Backend) {
	slow := watch(t, b, 0)
	fast := watch(t, b, 0)
	Recv(t, fast)
	const n = 40
	for i := uint64(1); i <= n; i++ {
		b.PutSink(SinkStatus("a", i)) // never blocks on slow
		b.Sync(t)
		if ev := Recv(t, fast); ev.GetSink().GetAppliedGeneration() != i {
			t.Fatalf("fast watcher missed a change: %v", ev)
		}
	}
	// The slow watcher now reads: a fresh snapshot instead of the changes
	// it missed, holding the newest state.
	var cut bool
	var seen uint64
	reads := 0
	for !cut || seen != n {
		ev := Recv(t, slow)
		// At most its buffer, plus the snapshot of a cut-over in progress.
		if reads++; reads > 5 {
			t.Fatalf("the stalled watcher got more than its buffer: %d events", reads)
		}
		if ev.GetSnapshotReason() == status.ReasonSlowWatcher {
			cut = true
		}
		if snap := ev.GetSnapshot(); snap != nil && len(snap.GetSinks()) > 0 {
			seen = snap.GetSinks()[0].GetAppliedGeneration()
		}
		if st := ev.GetSink(); st != nil {
			seen = st.GetAppliedGeneration()
		}
	}
	b.PutSink(SinkStatus("a", n+1))
	b.Sync(t)
	if ev := Recv(t, slow); ev.GetSink().GetAppliedGeneration() != n+1 {
		t.Fatalf("after the cut-over: %v", ev)
	}
}

func testCancel(t *testing.T, b Backend) {
	b.PutSink(SinkStatus("a", 1))
	b.Sync(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Watch(ctx, "s", 0)
	first := Recv(t, ch)
	cancel()
	for range ch {
	}
	snap, _ := b.Snapshot("s")
	if !proto.Equal(snap, first.GetSnapshot()) {
		t.Fatalf("snapshot changed without a change: %v then %v", first.GetSnapshot(), snap)
	}
}
