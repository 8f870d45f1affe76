package hubclient

import (
	"fmt"
	"strings"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

func snapEv(rev uint64, gen uint64, sinks ...*confighubv1.SinkStatus) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Snapshot{Snapshot: &confighubv1.GetStatusResponse{
		Stream: "s", Generation: gen, Hash: fmt.Sprint("h", gen), Sinks: sinks,
		Generations: []*confighubv1.GenerationStatus{{Generation: gen, SinksTotal: uint32(len(sinks))}}}}}
}

func removedEv(rev uint64, name string) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_SinkRemoved{SinkRemoved: name}}
}

func genEv(rev uint64, gen uint64, applied uint32) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Generation{Generation: &confighubv1.GenerationStatus{
		Generation: gen, Hash: fmt.Sprint("h", gen), SinksApplied: applied}}}
}

func st(name string, applied, rejected uint64) *confighubv1.SinkStatus {
	return &confighubv1.SinkStatus{Sink: name, AppliedGeneration: applied, RejectedGeneration: rejected}
}

// describe is the view in one line: ready, revision, generation and hash,
// the sinks as name=applied/rejected, the generations as gen:applied, and
// the counts for the generation counted.
func describe(v *StatusView) string {
	s := v.Status()
	var sinks, gens []string
	for _, x := range s.GetSinks() {
		sinks = append(sinks, fmt.Sprintf("%s=%d/%d", x.GetSink(), x.GetAppliedGeneration(), x.GetRejectedGeneration()))
	}
	for _, g := range s.GetGenerations() {
		gens = append(gens, fmt.Sprintf("%d:%d", g.GetGeneration(), g.GetSinksApplied()))
	}
	a, r, p := v.Counts()
	return fmt.Sprintf("ready=%v rev=%d gen=%d %s sinks=[%s] gens=[%s] counts=%d/%d/%d", v.Ready(), v.Revision(), s.GetGeneration(), s.GetHash(),
		strings.Join(sinks, " "), strings.Join(gens, " "), a, r, p)
}

// The view folds each kind of event on top of the last snapshot, a new
// snapshot replaces everything, and the counts for the generation waited
// for (applied/rejected/pending, of the sinks counted) follow every event.
func TestStatusViewFolds(t *testing.T) {
	gw := func(name string) bool { return strings.HasPrefix(name, "gw") }
	for _, c := range []struct {
		name   string
		gen    uint64
		only   func(string) bool
		events []*confighubv1.WatchStatusResponse
		want   string
	}{
		{"empty", 2, nil, nil, "ready=false rev=0 gen=0  sinks=[] gens=[] counts=0/0/0"},
		{"a sink before any snapshot", 2, nil, []*confighubv1.WatchStatusResponse{sinkEv(3, st("a", 2, 0))},
			"ready=false rev=3 gen=0  sinks=[a=2/0] gens=[] counts=1/0/0"},
		{"snapshot", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("b", 1, 0), st("a", 2, 0))},
			"ready=true rev=5 gen=2 h2 sinks=[a=2/0 b=1/0] gens=[2:0] counts=1/0/1"},
		{"a sink's new status replaces its old one", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("a", 1, 0)), sinkEv(6, st("a", 2, 0))},
			"ready=true rev=6 gen=2 h2 sinks=[a=2/0] gens=[2:0] counts=1/0/0"},
		{"a rejection, and a later rejection before applying", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("a", 1, 0), st("b", 1, 0)), sinkEv(6, st("a", 1, 2)), sinkEv(7, st("b", 1, 3))},
			"ready=true rev=7 gen=2 h2 sinks=[a=1/2 b=1/3] gens=[2:0] counts=0/2/0"},
		{"a removed sink is counted out", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("a", 1, 0), st("b", 2, 0)), removedEv(6, "a"), removedEv(7, "nope")},
			"ready=true rev=7 gen=2 h2 sinks=[b=2/0] gens=[2:0] counts=1/0/0"},
		{"a newer generation moves the stream's, an update replaces its status", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("a", 2, 0)), genEv(6, 3, 0), genEv(7, 2, 1), genEv(8, 3, 1)},
			"ready=true rev=8 gen=3 h3 sinks=[a=2/0] gens=[2:1 3:1] counts=1/0/0"},
		{"an older generation's status leaves the stream's generation", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2), genEv(6, 1, 4)},
			"ready=true rev=6 gen=2 h2 sinks=[] gens=[2:0 1:4] counts=0/0/0"},
		{"a snapshot replaces everything", 2, nil, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("a", 2, 0), st("b", 0, 2)), genEv(6, 3, 0), snapEv(9, 1, st("c", 0, 0))},
			"ready=true rev=9 gen=1 h1 sinks=[c=0/0] gens=[1:0] counts=0/0/1"},
		{"only the sinks counted", 2, gw, []*confighubv1.WatchStatusResponse{snapEv(5, 2, st("gw-0", 2, 0), st("konnect", 0, 0), st("gw-1", 1, 0)), sinkEv(6, st("konnect", 0, 2))},
			"ready=true rev=6 gen=2 h2 sinks=[gw-0=2/0 gw-1=1/0 konnect=0/2] gens=[2:0] counts=1/0/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := NewStatusView(c.gen, c.only)
			for _, ev := range c.events {
				v.Apply(ev)
			}
			if got := describe(v); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// Target recounts the sinks held for another generation and set of sinks,
// and the counts then follow the events for it.
func TestStatusViewTarget(t *testing.T) {
	v := NewStatusView(1, nil)
	v.Apply(snapEv(1, 2, st("gw-0", 2, 0), st("gw-1", 1, 0), st("konnect", 1, 0)))
	if a, r, p := v.Counts(); a != 3 || r != 0 || p != 0 {
		t.Fatalf("generation 1: counts %d/%d/%d, want 3/0/0", a, r, p)
	}
	v.Target(2, func(n string) bool { return n != "konnect" })
	if a, r, p := v.Counts(); a != 1 || r != 0 || p != 1 {
		t.Fatalf("generation 2 of the gateways: counts %d/%d/%d, want 1/0/1", a, r, p)
	}
	v.Apply(sinkEv(2, st("gw-1", 2, 0)))
	v.Apply(sinkEv(3, st("konnect", 1, 2)))
	if a, r, p := v.Counts(); a != 2 || r != 0 || p != 0 {
		t.Fatalf("after the events: counts %d/%d/%d, want 2/0/0", a, r, p)
	}
	if s := v.Sinks(); s[1].GetSink() != "gw-1" || s[1].GetAppliedGeneration() != 2 || v.Len() != 3 {
		t.Fatalf("Sinks, Len: %v %d", s, v.Len())
	}
}

func TestOutcomeOf(t *testing.T) {
	for _, c := range []struct {
		applied, rejected, gen uint64
		want                   Outcome
	}{
		{0, 0, 1, Pending},
		{1, 0, 1, Applied},
		{2, 0, 1, Applied},
		{2, 3, 3, Rejected},
		{0, 1, 1, Rejected},
		{1, 1, 1, Applied}, // applied wins: it runs the generation
		{0, 1, 2, Pending}, // rejected an older one only
	} {
		if got := OutcomeOf(st("a", c.applied, c.rejected), c.gen); got != c.want {
			t.Errorf("applied %d rejected %d, generation %d: %v, want %v", c.applied, c.rejected, c.gen, got, c.want)
		}
	}
}
