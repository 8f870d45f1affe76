package status_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/test/statustest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sinkStatus(name string, applied uint64) *confighubv1.SinkStatus {
	return &confighubv1.SinkStatus{Sink: name, Stream: "s", Kind: "test", AppliedGeneration: applied}
}

var recv = statustest.Recv

// brokerBackend runs the conformance suite on the local broker.
type brokerBackend struct{ *status.Broker }

func (b brokerBackend) PutSink(st *confighubv1.SinkStatus) { b.Broker.PutSink(st) }
func (b brokerBackend) RemoveSink(stream, sink string)     { b.Broker.RemoveSink(stream, sink) }
func (b brokerBackend) PutGeneration(stream string, g *confighubv1.GenerationStatus) {
	b.Broker.PutGeneration(stream, g)
}
func (brokerBackend) Sync(*testing.T) {} // a change is visible when the call returns

func TestConformance(t *testing.T) {
	statustest.Run(t, func(t *testing.T, o statustest.Options) statustest.Backend {
		b := status.New(status.WithWatchBuffer(o.WatchBuffer), status.WithHistory(o.History))
		t.Cleanup(b.Close)
		return brokerBackend{b}
	})
}

func TestRevisionsAreMonotonic(t *testing.T) {
	b := status.New()
	defer b.Close()
	var last uint64
	for i := 0; i < 10; i++ {
		for _, rev := range []uint64{
			b.PutSink(sinkStatus("a", uint64(i))),
			b.PutGeneration("other", &confighubv1.GenerationStatus{Generation: uint64(i + 1)}),
		} {
			if rev != last+1 {
				t.Fatalf("revision %d after %d", rev, last)
			}
			last = rev
		}
	}
	if b.Revision() != last {
		t.Fatalf("Revision() = %d, want %d", b.Revision(), last)
	}
}

func TestSnapshotIsConsistentWithEvents(t *testing.T) {
	b := status.New()
	defer b.Close()
	if _, ok := b.Snapshot("s"); ok {
		t.Fatal("snapshot of an unknown stream")
	}
	b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 1, Hash: "h1"})
	b.PutSink(sinkStatus("b", 1))
	b.PutSink(sinkStatus("a", 1))
	rev := b.PutSink(sinkStatus("c", 1))
	b.RemoveSink("s", "c")
	snap, ok := b.Snapshot("s")
	if !ok || snap.GetRevision() != rev+1 || snap.GetGeneration() != 1 || snap.GetHash() != "h1" {
		t.Fatalf("snapshot %v", snap)
	}
	if len(snap.GetSinks()) != 2 || snap.GetSinks()[0].GetSink() != "a" || snap.GetSinks()[1].GetSink() != "b" {
		t.Fatalf("sinks %v, want a, b sorted", snap.GetSinks())
	}
	// Only the last generations are kept.
	b2 := status.New()
	defer b2.Close()
	const n = status.Generations + 2
	for g := uint64(1); g <= n; g++ {
		b2.PutGeneration("s", &confighubv1.GenerationStatus{Generation: g})
	}
	if rev := b2.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 1, Hash: "again"}); rev != 0 {
		t.Fatal("a dropped generation was stored again")
	}
	snap, _ = b2.Snapshot("s")
	if gs := snap.GetGenerations(); len(gs) != status.Generations || gs[0].GetGeneration() != 3 || gs[len(gs)-1].GetGeneration() != n {
		t.Fatalf("generations %v", gs)
	}
}

func TestWatchClosesOnCancel(t *testing.T) {
	b := status.New()
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Watch(ctx, "s", 0)
	recv(t, ch)
	cancel()
	for range ch {
	}
	if status.Watchers(b, "s") != 0 {
		t.Fatal("watcher still registered")
	}
	ch2 := b.Watch(context.Background(), "s", 0)
	b.Close()
	n := 0
	for range ch2 {
		n++
	}
	if n != 1 { // the snapshot, then closed
		t.Fatalf("%d events before close", n)
	}
	if _, ok := <-b.Watch(context.Background(), "s", 0); ok {
		t.Fatal("watch after Close is not closed")
	}
}

// BenchmarkBrokerPut measures one status change fanned out to watchers that
// keep up (their buffers are drained by readers).
func BenchmarkBrokerPut(b *testing.B) {
	for _, watchers := range []int{0, 10, 1000} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			br := status.New()
			defer br.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			for i := 0; i < watchers; i++ {
				ch := br.Watch(ctx, "s", 0)
				go func() {
					for range ch {
					}
					done <- struct{}{}
				}()
			}
			st := sinkStatus("a", 1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				br.PutSink(st)
			}
			b.StopTimer()
			cancel()
			for i := 0; i < watchers; i++ {
				<-done
			}
		})
	}
}

// BenchmarkBrokerPutStalledWatcher: one watcher never reads; the others
// must not pay for it.
func BenchmarkBrokerPutStalledWatcher(b *testing.B) {
	br := status.New(status.WithWatchBuffer(16))
	defer br.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = br.Watch(ctx, "s", 0) // stalled
	st := sinkStatus("a", 1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		br.PutSink(st)
	}
}

// BenchmarkBrokerSnapshot measures a snapshot of a stream of 1,000 sinks.
func BenchmarkBrokerSnapshot(b *testing.B) {
	br := status.New()
	defer br.Close()
	for i := 0; i < 1000; i++ {
		br.PutSink(sinkStatus(fmt.Sprintf("gw-%04d", i), 1))
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := br.Snapshot("s"); !ok {
			b.Fatal("no snapshot")
		}
	}
}

// TestManyWatchersOneStalled: 100 watchers that keep up see every change
// while one stalled watcher is cut over, and publishing never waits.
func TestManyWatchersOneStalled(t *testing.T) {
	b := status.New(status.WithWatchBuffer(8))
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stalled := b.Watch(ctx, "s", 0)
	const readers, changes = 100, 200
	got := make(chan uint64, readers)
	errs := make(chan string, readers)
	done := make(chan struct{})
	for i := 0; i < readers; i++ {
		ch := b.Watch(ctx, "s", 0)
		go func() {
			defer func() { done <- struct{}{} }()
			want := uint64(1)
			for ev := range ch {
				if ev.GetSnapshot() != nil {
					if ev.GetSnapshotReason() != status.ReasonStart {
						errs <- "a reader that keeps up was cut over"
					}
					continue
				}
				if g := ev.GetSink().GetAppliedGeneration(); g != want {
					errs <- fmt.Sprintf("got change %d, want %d", g, want)
				}
				got <- want
				want++
			}
		}()
	}
	for i := uint64(1); i <= changes; i++ {
		b.PutSink(sinkStatus("a", i))
		for r := 0; r < readers; r++ {
			select {
			case <-got:
			case e := <-errs:
				t.Fatal(e)
			case <-time.After(10 * time.Second):
				t.Fatalf("change %d not seen by every reader", i)
			}
		}
	}
	var cut bool
	for n := 0; n < 10 && !cut; n++ {
		cut = recv(t, stalled).GetSnapshotReason() == status.ReasonSlowWatcher
	}
	if !cut {
		t.Fatal("the stalled watcher was not cut over")
	}
	cancel()
	for i := 0; i < readers; i++ {
		<-done
	}
}

// BenchmarkBrokerFanout measures a change reaching 1,000 watchers that
// read as fast as they can; cutovers/op counts slow-watcher snapshots.
func BenchmarkBrokerFanout(b *testing.B) {
	br := status.New()
	defer br.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const watchers = 1000
	last := make(chan struct{}, watchers)
	cutovers := make(chan int, watchers)
	final := uint64(b.N)
	for i := 0; i < watchers; i++ {
		ch := br.Watch(ctx, "s", 0)
		go func() {
			n, reached := 0, false
			for ev := range ch {
				if ev.GetSnapshotReason() == status.ReasonSlowWatcher {
					n++
				}
				var seen uint64
				if st := ev.GetSink(); st != nil {
					seen = st.GetAppliedGeneration()
				} else if snap := ev.GetSnapshot(); snap != nil && len(snap.GetSinks()) > 0 {
					seen = snap.GetSinks()[0].GetAppliedGeneration()
				}
				if seen == final && !reached {
					reached = true
					last <- struct{}{}
				}
			}
			cutovers <- n
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		br.PutSink(sinkStatus("a", uint64(i)))
	}
	for i := 0; i < watchers; i++ {
		<-last
	}
	b.StopTimer()
	cancel()
	total := 0
	for i := 0; i < watchers; i++ {
		total += <-cutovers
	}
	b.ReportMetric(float64(total)/float64(b.N), "cutovers/op")
}

// A restarted hub's broker must not resume a watcher from a revision of the
// previous run: its changes after that number are another history.
func TestWatchResumeAcrossRestartGetsSnapshot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := status.New(status.WithFirstRevision(1000))
	seen := old.PutSink(sinkStatus("a", 1))
	old.Close()

	// The new run starts later (a greater first revision) and has already
	// made more changes than the watcher's revision when it reconnects.
	b := status.New(status.WithFirstRevision(2000))
	defer b.Close()
	b.PutSink(sinkStatus("a", 7))
	if rev := b.PutSink(sinkStatus("b", 7)); rev <= 2000 {
		t.Fatalf("revision %d, want after the first revision 2000", rev)
	}
	ev := recv(t, b.Watch(ctx, "s", seen))
	if ev.GetSnapshotReason() != status.ReasonResumeGap || len(ev.GetSnapshot().GetSinks()) != 2 {
		t.Fatalf("resume from the previous run's revision %d: got %v, want a resume-gap snapshot of both sinks", seen, ev)
	}
	// A revision of this run still resumes.
	if ev := recv(t, b.Watch(ctx, "s", 2001)); ev.GetSnapshot() != nil || ev.GetSink().GetSink() != "b" {
		t.Fatalf("resume from 2001: %v", ev)
	}
}

// With a dispatch window, the changes of one round wait for the window
// (nothing reaches the watcher before it) and then all arrive, in order.
func TestDispatchWindowBatchesChanges(t *testing.T) {
	clock := clockwork.NewFakeClock()
	b := status.New(status.WithDispatchWindow(10*time.Millisecond), status.WithClock(clock))
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Watch(ctx, "s", 0)
	if ev := recv(t, ch); ev.GetSnapshotReason() != status.ReasonStart {
		t.Fatalf("first event %v", ev)
	}
	for round := uint64(0); round < 2; round++ {
		for i := uint64(1); i <= 3; i++ {
			b.PutSink(sinkStatus(fmt.Sprintf("sink-%d", i), round*3+i))
		}
		// The dispatcher has taken the round and waits for the window.
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := clock.BlockUntilContext(wctx, 1); err != nil {
			t.Fatal(err)
		}
		wcancel()
		if n := len(ch); n != 0 {
			t.Fatalf("round %d: %d changes sent before the window ended", round, n)
		}
		clock.Advance(10 * time.Millisecond)
		for i := uint64(1); i <= 3; i++ {
			ev := recv(t, ch)
			if ev.GetSink().GetSink() != fmt.Sprintf("sink-%d", i) || ev.GetRevision() != round*3+i {
				t.Fatalf("round %d: change %d is %v", round, i, ev)
			}
		}
	}
}

// TestGenerationNeverAheadOfSinks: the engine counts a sink's apply in the
// generation before it publishes the sink's status; a watcher and a
// snapshot still see the APPLIED sink first, then the count it makes up.
func TestGenerationNeverAheadOfSinks(t *testing.T) {
	b := status.New()
	defer b.Close()
	b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 1, SinksTotal: 2})
	b.PutSink(sinkStatus("a", 0))
	b.PutSink(sinkStatus("b", 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Watch(ctx, "s", 0)
	recv(t, ch) // snapshot

	// a applies: the count comes first, as the engine makes it.
	if rev := b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 1, SinksTotal: 2, SinksApplied: 1}); rev != 0 {
		t.Fatalf("a count ahead of the sinks was published at revision %d", rev)
	}
	if snap, _ := b.Snapshot("s"); snap.GetGenerations()[0].GetSinksApplied() != 0 {
		t.Fatalf("snapshot shows sinks_applied %d before any sink applied", snap.GetGenerations()[0].GetSinksApplied())
	}
	b.PutSink(sinkStatus("a", 1))
	// b applies and converges the generation; a later change of the same
	// generation replaces the held one.
	b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 1, SinksTotal: 2, SinksApplied: 2})
	b.PutSink(sinkStatus("b", 1))

	// The watcher gets a's and b's APPLIED, each before a count that
	// includes it (the count of 1 may be coalesced into the count of 2
	// when the changes fall in one round).
	applied := map[string]bool{}
	for {
		ev := recv(t, ch)
		if st := ev.GetSink(); st != nil {
			applied[st.GetSink()] = st.GetAppliedGeneration() >= 1
			continue
		}
		n := ev.GetGeneration().GetSinksApplied()
		var seen int
		for _, ok := range applied {
			if ok {
				seen++
			}
		}
		if int(n) > seen {
			t.Fatalf("revision %d: sinks_applied %d after %d APPLIED sink events", ev.GetRevision(), n, seen)
		}
		if n == 2 {
			break
		}
	}
	snap, _ := b.Snapshot("s")
	if n := snap.GetGenerations()[0].GetSinksApplied(); n != 2 {
		t.Fatalf("snapshot sinks_applied %d, want 2", n)
	}
}

// round makes the changes of do in one dispatch round (window d on clock)
// and returns what watcher ch then received, up to the broker's revision.
func round(t *testing.T, b *status.Broker, clock *clockwork.FakeClock, d time.Duration, ch <-chan *confighubv1.WatchStatusResponse, do func()) []*confighubv1.WatchStatusResponse {
	t.Helper()
	do()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(d)
	var got []*confighubv1.WatchStatusResponse
	for last := b.Revision(); len(got) == 0 || got[len(got)-1].GetRevision() < last; {
		got = append(got, recv(t, ch))
	}
	return got
}

// TestRoundCoalescesChanges: of one round's changes, a sink change
// that a later one of the same sink supersedes before the next generation
// change is left out; generation changes and each sink's status at them
// are all sent.
func TestRoundCoalescesChanges(t *testing.T) {
	const d = 10 * time.Millisecond
	clock := clockwork.NewFakeClock()
	b := status.New(status.WithDispatchWindow(d), status.WithClock(clock))
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Watch(ctx, "s", 0)
	recv(t, ch) // snapshot
	got := round(t, b, clock, d, ch, func() {
		b.PutSink(sinkStatus("a", 1))                                                       // 1: superseded by 3
		b.PutSink(sinkStatus("b", 1))                                                       // 2
		b.PutSink(sinkStatus("a", 2))                                                       // 3
		b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 2, SinksApplied: 1}) // 4
		b.PutSink(sinkStatus("a", 3))                                                       // 5: superseded by 7
		b.RemoveSink("s", "b")                                                              // 6
		b.PutSink(sinkStatus("a", 4))                                                       // 7
		b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 3})                  // 8: superseded by 10
		b.PutSink(sinkStatus("c", 3))                                                       // 9: kept, the count at 10 includes it
		b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: 3, SinksApplied: 1}) // 10
		b.PutSink(sinkStatus("c", 4))                                                       // 11
	})
	var desc []string
	for _, ev := range got {
		switch {
		case ev.GetSink() != nil:
			desc = append(desc, fmt.Sprintf("%d:%s=%d", ev.GetRevision(), ev.GetSink().GetSink(), ev.GetSink().GetAppliedGeneration()))
		case ev.GetSinkRemoved() != "":
			desc = append(desc, fmt.Sprintf("%d:-%s", ev.GetRevision(), ev.GetSinkRemoved()))
		default:
			desc = append(desc, fmt.Sprintf("%d:gen%d/%d", ev.GetRevision(), ev.GetGeneration().GetGeneration(), ev.GetGeneration().GetSinksApplied()))
		}
	}
	if want := "[2:b=1 3:a=2 4:gen2/1 6:-b 7:a=4 9:c=3 10:gen3/1 11:c=4]"; fmt.Sprint(desc) != want {
		t.Fatalf("round sent %v, want %s", desc, want)
	}
	// A resume replays the history as it was made.
	rch := b.Watch(ctx, "s", 0+1)
	for _, want := range []uint64{2, 3, 4, 5, 6, 7, 8, 9, 10, 11} {
		if ev := recv(t, rch); ev.GetRevision() != want {
			t.Fatalf("resume from 1: revision %d, want %d", ev.GetRevision(), want)
		}
	}
}

// TestCoalescedWatchMatchesEveryGeneration: whatever the changes of a
// round, a watcher's view (its snapshot plus the changes it received)
// equals the broker's state at every generation change it receives and at
// the end of every round, it gets every generation, no generation twice in
// a round and no sink twice between two generation changes.
func TestCoalescedWatchMatchesEveryGeneration(t *testing.T) {
	const d = 10 * time.Millisecond
	rng := rand.New(rand.NewPCG(17, 5))
	for trial := range 50 {
		clock := clockwork.NewFakeClock()
		b := status.New(status.WithDispatchWindow(d), status.WithClock(clock))
		ctx, cancel := context.WithCancel(context.Background())
		ch := b.Watch(ctx, "s", 0)
		recv(t, ch)
		state := map[string]uint64{} // the broker's sinks, as changed
		atGen := map[uint64]string{} // state at each generation change's revision
		view := map[string]uint64{}  // the watcher's
		gen := uint64(0)
		gens := map[uint64]bool{} // generations the watcher got
		for r := range 3 {
			got := round(t, b, clock, d, ch, func() {
				changed := false
				for range 1 + rng.IntN(12) {
					name := string(rune('a' + rng.IntN(3)))
					switch rng.IntN(6) {
					case 0, 1: // a new generation, or an update of the newest
						if gen == 0 || rng.IntN(2) == 0 {
							gen++
						}
						g := &confighubv1.GenerationStatus{Generation: gen, SinksTotal: rng.Uint32N(100)}
						if rev := b.PutGeneration("s", g); rev != 0 {
							atGen[rev], changed = fmt.Sprint(state), true
						}
					case 2:
						if b.RemoveSink("s", name) != 0 {
							delete(state, name)
							changed = true
						}
					default:
						v := rng.Uint64N(100)
						b.PutSink(sinkStatus(name, v))
						state[name], changed = v, true
					}
				}
				if !changed { // a round without a change has nothing to send
					b.PutSink(sinkStatus("a", 0))
					state["a"] = 0
				}
			})
			seen, seenGen := map[string]bool{}, map[uint64]bool{}
			for _, ev := range got {
				name, isSink := ev.GetSink().GetSink(), ev.GetSink() != nil
				if rm := ev.GetSinkRemoved(); rm != "" {
					name, isSink = rm, true
				}
				if !isSink {
					if g := ev.GetGeneration().GetGeneration(); seenGen[g] {
						t.Fatalf("trial %d round %d: generation %d sent twice in a round", trial, r, g)
					} else {
						seenGen[g] = true
					}
					clear(seen)
					if want, ok := atGen[ev.GetRevision()]; !ok || fmt.Sprint(view) != want {
						t.Fatalf("trial %d round %d: at generation change %d the watcher sees %v, the broker had %s", trial, r, ev.GetRevision(), view, want)
					}
					continue
				}
				if seen[name] {
					t.Fatalf("trial %d round %d: sink %s sent twice between generation changes", trial, r, name)
				}
				seen[name] = true
				if st := ev.GetSink(); st != nil {
					view[name] = st.GetAppliedGeneration()
				} else {
					delete(view, name)
				}
			}
			if fmt.Sprint(view) != fmt.Sprint(state) {
				t.Fatalf("trial %d round %d: the watcher sees %v, the broker has %v", trial, r, view, state)
			}
			for g := range seenGen {
				gens[g] = true
			}
		}
		for g := uint64(1); g <= gen; g++ {
			if !gens[g] {
				t.Fatalf("trial %d: generation %d never sent (%d made)", trial, g, gen)
			}
		}
		cancel()
		b.Close()
	}
}
