package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

const (
	watchers      = 1000
	watcherConns  = 4
	watchSinks    = 10
	watchConfigKB = 16
	watchPace     = 250 * time.Millisecond
	// About 33 changes per push (12 messages per watcher once a round
	// coalesced them): some 80 pushes fill the stalled watcher's 64 KiB
	// window. The rounds give the ack rows 64 samples a side (24 quick).
	watchWarm        = 20
	watchRoundPushes = 8
	watchRounds      = 8
	watchRoundsQuick = 3
)

// watchStats is what one normal watcher saw.
type watchStats struct {
	snapRev  uint64 // revision of its first snapshot
	lastRev  uint64
	events   int // changes after the first snapshot
	cutOvers int // later snapshots (slow-watcher or resume)
	// firstGen is the generation of its first snapshot; gens every
	// generation it was told of, by a generation event or a snapshot
	// (after a cut-over: the resume).
	firstGen uint64
	gens     map[uint64]bool
}

// see records the generations an event tells of.
func (st *watchStats) see(ev *confighubv1.WatchStatusResponse) {
	if st.gens == nil {
		st.gens = map[uint64]bool{}
	}
	if snap := ev.GetSnapshot(); snap != nil {
		st.gens[snap.GetGeneration()] = true
		for _, g := range snap.GetGenerations() {
			st.gens[g.GetGeneration()] = true
		}
		return
	}
	if g := ev.GetGeneration(); g != nil {
		st.gens[g.GetGeneration()] = true
	}
}

// sawAll says whether the watcher was told of every generation after its
// first snapshot up to last.
func (st *watchStats) sawAll(last uint64) bool {
	for g := st.firstGen + 1; g <= last; g++ {
		if !st.gens[g] {
			return false
		}
	}
	return true
}

// scenarioWatchers: scenario 5. 999 WatchStatus streams over gRPC that read
// everything (in a child process), one that never reads (its own
// connection, a small flow control window): every normal watcher must be
// told of every generation (a resume from a snapshot counts), and the push
// latency must not depend on the watchers. The ack's baseline is a second
// hub in this process, set up the same way, with no watchers: rounds of
// paced pushes to one hub or the other run interleaved in random order,
// each starting quiet (the previous round's sinks applied and, after a
// round on the watched hub, every watcher caught up).
func scenarioWatchers(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	watched, err := newWatchEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer watched.close()
	alone, err := newWatchEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer alone.close()
	base := genConfig(watchConfigKB << 10)
	stamp := 0
	// pushRound pushes n configs to e, one per pace, and waits for its
	// sinks to apply the last one and the rejecting sink's refusal of it
	// (an 8 KiB status for every watcher), so that the round ends quiet.
	pushRound := func(e *env, n int, pace time.Duration) ([]time.Duration, uint64, error) {
		var lat []time.Duration
		var gen uint64
		for i := range n {
			if i > 0 && pace > 0 {
				time.Sleep(pace)
			}
			stamp++
			cfg := stamped(base, stamp)
			t0 := time.Now()
			g, err := e.push(ctx, cfg)
			if err != nil {
				return nil, 0, err
			}
			lat = append(lat, time.Since(t0))
			gen = g
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for i := range watchSinks {
			if _, err := e.applies.waitDone(wctx, fmt.Sprintf("sink-%02d", i), gen); err != nil {
				return nil, 0, err
			}
		}
		return lat, gen, waitRejected(wctx, e, gen)
	}
	for _, e := range []*env{watched, alone} { // warm-up
		if _, _, err := pushRound(e, watchWarm, 0); err != nil {
			return nil, err
		}
	}

	// The watchers of the watched hub: the stalled one here, the 999
	// others in a child process.
	wctx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	addr := watched.conn.Target()
	// The stalled one: its own connection with a fixed 64 KiB window (no
	// BDP growth), so the hub's sends block once it holds 64 KiB.
	sc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		return nil, err
	}
	defer func() { _ = sc.Close() }()
	stalled, err := confighubv1.NewConfigHubServiceClient(sc).WatchStatus(wctx, &confighubv1.WatchStatusRequest{})
	if err != nil {
		return nil, err
	}
	child, err := startWatchChild(addr)
	if err != nil {
		return nil, err
	}
	defer child.close()

	rounds := watchRounds
	if o.quick {
		rounds = watchRoundsQuick
	}
	var with, without []time.Duration
	var paced watchTally
	var lastGen uint64
	_, load, err := o.interleaved(5, 0, rounds,
		func() (time.Duration, error) {
			lat, gen, err := pushRound(watched, watchRoundPushes, watchPace)
			if err != nil {
				return 0, err
			}
			with, lastGen = append(with, lat...), gen
			st, _ := watched.hub.Status("")
			if paced, err = child.drain(st.GetRevision(), gen); err != nil {
				return 0, fmt.Errorf("watchers: %w", err)
			}
			return 0, nil
		},
		func() (time.Duration, error) {
			lat, _, err := pushRound(alone, watchRoundPushes, watchPace)
			without = append(without, lat...)
			return 0, err
		})
	if err != nil {
		return nil, err
	}
	// A burst (back to back) with the watchers: informational.
	burst, burstGen, err := pushRound(watched, watchRoundPushes*rounds, 0)
	if err != nil {
		return nil, err
	}
	final, _ := watched.hub.Status("")
	after, err := child.drain(final.GetRevision(), burstGen)
	if err != nil {
		return nil, fmt.Errorf("watchers: %w", err)
	}
	// The stalled watcher reads now, after all the rounds: the hub never
	// waited for it (the ack rows); it either kept every change (its
	// backlog fit its buffer and flow-control window) or was cut over to a
	// fresh snapshot.
	stalledGot := "did not reach the last change in 10 s"
	lastRev := final.GetRevision()
	sctx, cancel := context.WithTimeout(wctx, 10*time.Second)
	stop := context.AfterFunc(sctx, stopWatchers) // unblocks Recv on timeout
	for read := 0; ; read++ {
		ev, err := stalled.Recv()
		if err != nil {
			break
		}
		if ev.GetSnapshotReason() == status.ReasonSlowWatcher {
			stalledGot = "cut over to a fresh snapshot (slow-watcher)"
			break
		}
		if ev.GetRevision() >= lastRev {
			stalledGot = fmt.Sprintf("kept every change (%d messages: its backlog fit its buffer)", read)
			break
		}
	}
	stop()
	cancel()
	log("  %d watchers: %d of %d normal ones saw every generation up to %d (%d resumed after a cut-over), %d read every round without one (%d events in all, %d behind after %v); stalled one %s; push p50 %.2f ms without, %.2f ms with",
		watchers, paced.SawGens, paced.Watchers, lastGen, paced.Resumed, paced.Complete, paced.Events, paced.Behind, watchDrainWait, stalledGot, medianMS(without), medianMS(with))
	n := float64(paced.Watchers)
	rows := []Row{
		{Scenario: "5 watchers that saw every generation, resumes counted (999 + 1 stalled)", Unit: "", Hub: float64(paced.SawGens), Baseline: n,
			Ratio: float64(paced.SawGens) / n, Target: "all 999", OK: paced.SawGens == paced.Watchers, Runs: 1,
			Note: fmt.Sprintf("stalled watcher (read after all the rounds): %s; %d watchers were cut over and resumed from their snapshot; %d had not read the last change %v after the last push",
				stalledGot, paced.Resumed, paced.Behind, watchDrainWait)},
		{Scenario: "5 watchers that read every round without a cut-over", Unit: "", Hub: float64(paced.Complete), Baseline: n,
			Ratio: float64(paced.Complete) / n, Target: "-", Info: true, OK: true, Runs: 1},
		ratioRow(fmt.Sprintf("5 push ack %d KiB, 1,000 watchers / none", watchConfigKB), "ms", medianMS(with), medianMS(without), 1.2, len(with)),
	}
	rows[0].Note += fmt.Sprintf("; pushes every %v, watch buffer %d (default)", watchPace, status.DefaultWatchBuffer)
	rows[2].Note = fmt.Sprintf("%d rounds of %d pushes, one every %v, to the watched hub and as many to a second hub with no watchers in the same process (sharing its Go scheduler and heap), interleaved in random order; the 999 watchers read in a child process on the same 2 cores",
		rounds, watchRoundPushes, watchPace)
	rows[2].withSpread(with, without, load)
	rows = append(rows, Row{Scenario: fmt.Sprintf("5 push ack %d KiB back to back, 1,000 watchers", watchConfigKB), Unit: "ms", Hub: medianMS(burst), Baseline: medianMS(without),
		Ratio: medianMS(burst) / medianMS(without), Target: "-", Info: true, OK: true, Runs: len(burst),
		Note: fmt.Sprintf("about 33 changes (12 messages once coalesced) x 1,000 gRPC streams per push; %d slow readers were cut over to a snapshot (by design); %d of %d saw every generation",
			after.CutOvers-paced.CutOvers, after.SawGens, after.Watchers)})
	return rows, nil
}

// waitRejected waits until the rejecting sink of e's default stream has
// refused generation gen.
func waitRejected(ctx context.Context, e *env, gen uint64) error {
	for {
		if st, err := e.hub.Status(""); err == nil {
			for _, s := range st.GetSinks() {
				if s.GetSink() == "rejecting" && s.GetRejectedGeneration() >= gen {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sink rejecting did not refuse generation %d: %w", gen, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// newWatchEnv is a hub for scenario 5: watchSinks sinks that accept, and
// one the destination rejects with a long error (8 KiB, like a gateway's
// entity errors): large status events fill the stalled watcher's
// flow-control window quickly.
func newWatchEnv(ctx context.Context) (*env, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	for i := range watchSinks {
		if err := e.putSinks(ctx, benchSpec(fmt.Sprintf("sink-%02d", i), 0, false, false, nil)); err != nil {
			e.close()
			return nil, err
		}
	}
	rej := benchSpec("rejecting", 0, false, false, nil)
	rej.GetCustom().Fields["fail_bytes"] = structpb.NewNumberValue(8 << 10)
	if err := e.putSinks(ctx, rej); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}
