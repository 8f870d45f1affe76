package robustness

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func applied(name string, gen uint64, hash string) *confighubv1.SinkStatus {
	return &confighubv1.SinkStatus{Sink: name, Stream: "s", State: confighubv1.SinkState_SINK_STATE_APPLIED,
		DesiredGeneration: gen, AppliedGeneration: gen, AppliedHash: hash, DesiredHash: hash}
}

func genEvent(rev, gen uint64, hash string) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Generation{
		Generation: &confighubv1.GenerationStatus{Generation: gen, Hash: hash}}}
}

func sinkEvent(rev uint64, st *confighubv1.SinkStatus) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Sink{Sink: st}}
}

func snapshot(rev uint64, st *confighubv1.GetStatusResponse) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Snapshot{Snapshot: st}, SnapshotReason: "start"}
}

// goodHistory is a small run that satisfies every invariant: four pushes
// to stream "s" and one lost to a kill before its answer, one unchanged, two
// restarts, one gateway "gw" and a watcher that resumed once.
func goodHistory() *History {
	final := func() *confighubv1.GetStatusResponse {
		return &confighubv1.GetStatusResponse{Revision: 20, Stream: "s", Generation: 3, Hash: "h3",
			Sinks: []*confighubv1.SinkStatus{applied("gw", 3, "h3")}}
	}
	return &History{
		Pushes: []Push{
			{Pusher: 1, Stream: "s", Content: "c1", Hash: "h1", Kind: PushUnary, Call: at(0), Return: at(10), Gen: 1, AckHash: "h1"},
			{Pusher: 2, Stream: "s", Content: "c2", Hash: "h2", Kind: PushUpload, Call: at(20), Return: at(30), Gen: 2, AckHash: "h2"},
			{Pusher: 2, Stream: "s", Content: "c9", Hash: "h9", Kind: PushUnary, Call: at(33), Return: at(36), Code: codes.Unavailable, Err: "killed"},
			{Pusher: 1, Stream: "s", Content: "c3", Hash: "h3", Kind: PushUpload, Expected: 2, Call: at(100), Return: at(110), Gen: 3, AckHash: "h3"},
			{Pusher: 2, Stream: "s", Content: "c3", Hash: "h3", Kind: PushUnary, Call: at(120), Return: at(130), Gen: 3, AckHash: "h3", Unchanged: true},
		},
		Restarts: []Restart{
			{Killed: at(35), Streams: map[string]Observation{"s": {Gen: 2, Hash: "h2", Generations: map[uint64]string{1: "h1", 2: "h2"}}}},
			{Killed: at(200), Streams: map[string]Observation{"s": {Gen: 3, Hash: "h3"}}},
		},
		Watches: []WatchSession{
			{Watcher: 1, Stream: "s", Events: []*confighubv1.WatchStatusResponse{
				snapshot(5, &confighubv1.GetStatusResponse{Revision: 5, Generation: 1, Hash: "h1", Sinks: []*confighubv1.SinkStatus{applied("gw", 1, "h1")}}),
				genEvent(7, 2, "h2"),
			}},
			{Watcher: 1, Stream: "s", From: 7, Events: []*confighubv1.WatchStatusResponse{
				sinkEvent(9, applied("gw", 2, "h2")),
				genEvent(12, 3, "h3"),
				sinkEvent(14, applied("gw", 3, "h3")),
			}},
		},
		Loads: map[string][]Load{"gw": {
			{Content: "c1", EmuHash: "e1", Status: 201},
			{Content: "c2", EmuHash: "e2", Status: 500},
			{Content: "c2", EmuHash: "e2", Status: 201},
			{Content: "c3", EmuHash: "e3", Status: 0},
			{Content: "c3", EmuHash: "e3", Status: 201},
		}},
		GatewayStream: map[string]string{"gw": "s"},
		FinalStatus:   map[string]*confighubv1.GetStatusResponse{"s": final()},
		FinalGateways: map[string]GatewayFinal{"gw": {Hash: "e3", Content: "c3"}},
		FinalWatchers: map[int]WatcherFinal{1: {Stream: "s", Status: final()}},
	}
}

func TestGoodHistoryPasses(t *testing.T) {
	for _, r := range Check(goodHistory()) {
		if !r.OK() {
			t.Errorf("%s: %v", r.Invariant, r.Violations)
		}
		if r.Checked == 0 {
			t.Errorf("%s checked nothing", r.Invariant)
		}
	}
}

// TestCheckerCatchesEachBrokenInvariant breaks the good history in one
// place per case: the named invariant, and only it, must fail.
func TestCheckerCatchesEachBrokenInvariant(t *testing.T) {
	cases := []struct {
		name  string
		want  Invariant
		words string
		brk   func(h *History)
	}{
		{"acked generation lost at a restart", Durable, "acknowledged before the kill", func(h *History) {
			h.Restarts[1].Streams["s"] = Observation{Gen: 2, Hash: "h2"}
		}},
		{"acked generation stored with another hash", Durable, "has hash", func(h *History) {
			h.Restarts[1].Streams["s"] = Observation{Gen: 3, Hash: "hX"}
		}},
		{"generation reused for another configuration", Monotonic, "two configurations", func(h *History) {
			h.Pushes[3].Gen = 1
		}},
		{"generation goes back in real time", Monotonic, "after pusher", func(h *History) {
			h.Pushes = append(h.Pushes, Push{Pusher: 3, Stream: "s", Content: "c1", Hash: "h1", Call: at(300), Return: at(310), Gen: 1, AckHash: "h1"})
		}},
		{"new configuration acked without a new generation", Monotonic, "unchanged=false", func(h *History) {
			h.Pushes[4].Unchanged = false
		}},
		{"sink stuck at an older generation", Converged, "last acknowledged 3", func(h *History) {
			h.FinalStatus["s"].Sinks[0] = applied("gw", 2, "h2")
		}},
		{"sink rejected another generation", Converged, "rejected 2", func(h *History) {
			h.FinalStatus["s"].Sinks[0] = &confighubv1.SinkStatus{Sink: "gw", State: confighubv1.SinkState_SINK_STATE_FAILED,
				DesiredGeneration: 3, AppliedGeneration: 3, AppliedHash: "h3", RejectedGeneration: 2}
		}},
		{"gateway loaded an older generation after a newer one", InOrder, "loaded generation 1 after generation 2", func(h *History) {
			h.Loads["gw"] = append(h.Loads["gw"][:3:3], Load{Content: "c1", EmuHash: "e1", Status: 201}, h.Loads["gw"][4])
		}},
		{"resumed watch repeats a revision", WatchExact, "repeats", func(h *History) {
			h.Watches[1].Events = append([]*confighubv1.WatchStatusResponse{genEvent(7, 2, "h2")}, h.Watches[1].Events...)
		}},
		{"resumed watch misses a generation", WatchExact, "was missed", func(h *History) {
			// Watcher 2 got generation 2's event; watcher 1's resume lost it.
			h.Watches = append(h.Watches, WatchSession{Watcher: 2, Stream: "s", Events: h.Watches[0].Events})
			h.Watches[0].Events = h.Watches[0].Events[:1]
			h.Watches[1].From = 5
		}},
		{"watch ends unlike GetStatus", WatchExact, "disagrees with GetStatus", func(h *History) {
			h.Watches[1].Events = h.Watches[1].Events[:2]
		}},
		{"gateway runs another configuration", GatewayHash, "runs content", func(h *History) {
			h.FinalGateways["gw"] = GatewayFinal{Hash: "e2", Content: "c2"}
		}},
		{"gateway reports a hash unlike its body", GatewayHash, "reports configuration_hash", func(h *History) {
			h.FinalGateways["gw"] = GatewayFinal{Hash: "e2", Content: "c3"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := goodHistory()
			c.brk(h)
			for _, r := range Check(h) {
				switch {
				case r.Invariant == c.want && r.OK():
					t.Errorf("%s passed a broken history", r.Invariant)
				case r.Invariant == c.want && !strings.Contains(strings.Join(r.Violations, "\n"), c.words):
					t.Errorf("%s: violations %q do not say %q", r.Invariant, r.Violations, c.words)
				case r.Invariant != c.want && !r.OK():
					t.Errorf("%s also failed: %v", r.Invariant, r.Violations)
				}
			}
		})
	}
}

// TestBreakCorruptsEachInvariant: every -robustness.break value corrupts a
// recorded good history so that its invariant, and only it, fails (what the
// make robustness BREAK=... run shows on a real history).
func TestBreakCorruptsEachInvariant(t *testing.T) {
	for _, inv := range Invariants {
		t.Run(string(inv), func(t *testing.T) {
			h := goodHistory()
			if err := Corrupt(h, inv); err != nil {
				t.Fatal(err)
			}
			for _, r := range Check(h) {
				if (r.Invariant == inv) == r.OK() {
					t.Errorf("%s: ok=%v after corrupting %s (%v)", r.Invariant, r.OK(), inv, r.Violations)
				}
			}
		})
	}
}
