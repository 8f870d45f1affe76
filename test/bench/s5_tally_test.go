package main

import (
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

func snapEv(rev uint64, reason string, gens ...uint64) *confighubv1.WatchStatusResponse {
	snap := &confighubv1.GetStatusResponse{Revision: rev}
	for _, g := range gens {
		snap.Generation = g
		snap.Generations = append(snap.Generations, &confighubv1.GenerationStatus{Generation: g})
	}
	return &confighubv1.WatchStatusResponse{Revision: rev, SnapshotReason: reason, Event: &confighubv1.WatchStatusResponse_Snapshot{Snapshot: snap}}
}

func genEv(rev, gen uint64) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Generation{Generation: &confighubv1.GenerationStatus{Generation: gen}}}
}

// TestTallyCountsResumes: scenario 5 counts a watcher told of every
// generation by events, or by the snapshot it resumed from after a
// cut-over; not one whose resume skipped a generation, nor one that did
// not read up to the last generation.
func TestTallyCountsResumes(t *testing.T) {
	watchers := [][]*confighubv1.WatchStatusResponse{
		{snapEv(10, status.ReasonStart, 1), genEv(11, 2), genEv(14, 3)},                                  // every event
		{snapEv(10, status.ReasonStart, 1), genEv(11, 2), snapEv(14, status.ReasonSlowWatcher, 1, 2, 3)}, // resumed, the snapshot shows 3
		{snapEv(10, status.ReasonStart, 1), snapEv(14, status.ReasonSlowWatcher, 3)},                     // resumed, 2 never shown
		{snapEv(10, status.ReasonStart, 1), genEv(11, 2)},                                                // behind
	}
	stats := make([]watchStats, len(watchers))
	for i, evs := range watchers {
		for j, ev := range evs {
			stats[i].record(ev, j == 0)
		}
	}
	got := tally(stats, 14, 3)
	want := watchTally{Watchers: 4, SawGens: 2, Complete: 1, Resumed: 2, CutOvers: 2, Events: 4, Changes: 4, Behind: 1}
	if got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
}
