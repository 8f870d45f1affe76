package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// TestHistoryRollbackBringsTheFleetBack: on a real hub (bolt store), two
// kic-golden fixtures pushed to three emulated gateways are two
// generations with their pusher, peer and entity counts; confighubctl diff
// shows what changed between them; a rollback to the first is a third
// generation that brings every gateway back to the first hash, converged
// in the history; a gateway that refuses a generation is diffed against
// it; the history survives a restart.
func TestHistoryRollbackBringsTheFleetBack(t *testing.T) {
	f := startFleet(t, 3, "10s")
	a := harness.Fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	b := harness.Fixture(t, "httproute-example__default.yaml")
	g1 := f.push(t, a)
	waitHash(t, f.gws, kongemu.ConfigHash(a), "the first fixture")
	g2 := f.push(t, b)
	waitHash(t, f.gws, kongemu.ConfigHash(b), "the second fixture")

	out, err := exec.Command(bins.Path("confighubctl"), "--addr", f.hub.Addr, "diff").CombinedOutput()
	if err != nil {
		t.Fatalf("confighubctl diff: %v\n%s", err, out)
	}
	t.Logf("confighubctl diff:\n%s", out)
	for _, want := range []string{"deleting consumer consumer", "deleting basicauth_credential consumer-1 (consumer consumer)", "creating route ", "Summary:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("confighubctl diff lacks %q", want)
		}
	}
	if strings.Contains(string(out), "consumer-1-password") || strings.Contains(string(out), "PRIVATE KEY") {
		t.Errorf("a secret in confighubctl diff:\n%s", out)
	}

	c := hubclient.New(harness.Dial(t, f.hub.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	generations := func() ([]*confighubv1.GenerationRecord, error) {
		res, err := c.Hub.ListGenerations(ctx, &confighubv1.ListGenerationsRequest{Limit: 1000})
		return res.GetGenerations(), err
	}
	if _, err := c.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Generation: g1, ExpectedGeneration: g1}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("rollback with a stale expected generation: %v", err)
	}
	rb, err := c.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Generation: g1, ExpectedGeneration: g2})
	if err != nil || rb.GetUnchanged() || rb.GetGeneration() != g2+1 || rb.GetSinks() != 3 {
		t.Fatalf("rollback: %v %v", rb, err)
	}
	waitHash(t, f.gws, kongemu.ConfigHash(a), "the rollback")
	var gens []*confighubv1.GenerationRecord
	harness.Eventually(t, 20*time.Second, func() bool {
		gens, err = generations()
		return err == nil && len(gens) == 3 && gens[0].GetOutcome() == confighubv1.GenerationOutcome_GENERATION_OUTCOME_CONVERGED
	}, "the rollback converged in the history: %v", &gens)
	for i, g := range gens {
		if g.GetPusher() != "anonymous" || !strings.HasPrefix(g.GetPeer(), "127.0.0.1:") || g.GetEntities()["service"] == 0 || g.GetSize() == 0 || g.GetAcceptTime() == nil {
			t.Errorf("generation %d: %v", g.GetGeneration(), g)
		}
		if want := map[int]uint64{0: g1}[i]; g.GetRollbackOf() != want {
			t.Errorf("generation %d rolls back to %d, want %d", g.GetGeneration(), g.GetRollbackOf(), want)
		}
	}
	if res, err := c.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Generation: g1, ExpectedGeneration: 0}); err != nil || !res.GetUnchanged() {
		t.Fatalf("rollback to the current hash: %v %v, want unchanged", res, err)
	}

	// A FAILED gateway's diff: what it runs against what it refused.
	if _, err := c.Hub.DiffConfig(ctx, &confighubv1.DiffConfigRequest{Sink: "gw-0"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("the diff of an APPLIED sink: %v, want FailedPrecondition", err)
	}
	bad := f.push(t, []byte(brokenConfig))
	harness.Eventually(t, 20*time.Second, func() bool {
		for _, s := range f.status(t).GetSinks() {
			if s.GetSink() == "gw-0" {
				return s.GetState() == confighubv1.SinkState_SINK_STATE_FAILED && s.GetRejectedGeneration() == bad
			}
		}
		return false
	}, "gw-0 rejected generation %d", bad)
	sd, err := c.Hub.DiffConfig(ctx, &confighubv1.DiffConfigRequest{Sink: "gw-0"})
	if err != nil || sd.GetSink() != "gw-0" || sd.GetFrom() != rb.GetGeneration() || sd.GetTo() != bad || sd.GetCreated() != 3 {
		t.Fatalf("the diff of the FAILED gw-0: %v %v", sd, err)
	}
	found := false
	for _, ch := range sd.GetChanges() {
		found = found || ch.GetName() == "default.broken.broken.0" && strings.Contains(strings.Join(ch.GetTags(), ","), "k8s-name:broken")
	}
	if !found {
		t.Errorf("the diff of gw-0 does not show the route it refused: %v", sd)
	}

	// The history is in the store: a restart keeps it.
	if err := f.hub.Stop(); err != nil {
		t.Fatal(err)
	}
	h := harness.StartHub(t, bins, "--data-dir", f.hub.DataDir)
	c = hubclient.New(harness.Dial(t, h.Addr))
	gens, err = generations()
	if err != nil || len(gens) != 4 || gens[3].GetPusher() != "anonymous" || gens[1].GetRollbackOf() != g1 {
		t.Fatalf("history after a restart: %v %v", gens, err)
	}
	cfg, err := c.Hub.GetConfig(ctx, &confighubv1.GetConfigRequest{Generation: g2})
	if err != nil || cfg.GetGeneration() != g2 || cfg.GetHash() != config.Hash(b) {
		t.Fatalf("GetConfig of generation %d after a restart: %v %v", g2, cfg, err)
	}
}

// TestReplicasHistory: on replicas sharing etcd, generations pushed
// through one replica are listed, diffed and rolled back through another,
// with the pusher recorded; the rollback reaches every sink, and the
// history survives killing the replica that took the pushes.
func TestReplicasHistory(t *testing.T) {
	rs := startReplicaSet(t)
	a := harness.Fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	b := harness.Fixture(t, "httproute-example__default.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c0 := rs.live()["r0"]
	var gens [2]uint64
	for i, raw := range [][]byte{a, b} {
		res, err := c0.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: raw, Labels: map[string]string{"n": string(rune('a' + i))}})
		if err != nil {
			t.Fatal(err)
		}
		gens[i] = res.GetGeneration()
		harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(gens[i]) }, "generation %d applied", gens[i])
	}
	c1 := hubclient.New(harness.Dial(t, rs.hub("r1").Addr))
	d, err := c1.Hub.DiffConfig(ctx, &confighubv1.DiffConfigRequest{})
	if err != nil || d.GetFrom() != gens[0] || d.GetTo() != gens[1] || d.GetDeleted() == 0 || d.GetCreated() == 0 {
		t.Fatalf("diff through r1: %v %v", d, err)
	}
	rb, err := c1.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Generation: gens[0], ExpectedGeneration: gens[1]})
	if err != nil || rb.GetGeneration() != gens[1]+1 {
		t.Fatalf("rollback through r1: %v %v", rb, err)
	}
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(rb.GetGeneration()) }, "the rollback applied by every sink")

	h := rs.hub("r0")
	rs.forget("r0")
	h.Kill()
	c2 := hubclient.New(harness.Dial(t, rs.hub("r2").Addr))
	list, err := c2.Hub.ListGenerations(ctx, &confighubv1.ListGenerationsRequest{Limit: 1000})
	recs := list.GetGenerations()
	if err != nil || len(recs) != 3 {
		t.Fatalf("history through r2 after r0 was killed: %v %v", recs, err)
	}
	if recs[0].GetRollbackOf() != gens[0] || recs[0].GetHash() != config.Hash(a) || recs[2].GetLabels()["n"] != "a" {
		t.Errorf("history: %v", recs)
	}
	for _, r := range recs {
		if r.GetPusher() != "anonymous" || r.GetPeer() == "" || r.GetEntities()["route"] == 0 {
			t.Errorf("generation %d: %v", r.GetGeneration(), r)
		}
	}
	cfg, err := c2.Hub.GetConfig(ctx, &confighubv1.GetConfigRequest{Generation: gens[1]})
	if err != nil || cfg.GetHash() != config.Hash(b) {
		t.Fatalf("GetConfig of generation %d through r2: %v %v", gens[1], cfg, err)
	}
}
