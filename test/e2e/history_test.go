package e2e

import (
	"context"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

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
	d, err := c1.Diff(ctx, "", 0, 0)
	if err != nil || d.GetFrom() != gens[0] || d.GetTo() != gens[1] || d.GetDeleted() == 0 || d.GetCreated() == 0 {
		t.Fatalf("diff through r1: %v %v", d, err)
	}
	rb, err := c1.Rollback(ctx, "", gens[0], gens[1])
	if err != nil || rb.GetGeneration() != gens[1]+1 {
		t.Fatalf("rollback through r1: %v %v", rb, err)
	}
	harness.Eventually(t, 30*time.Second, func() bool { return rs.converged(rb.GetGeneration()) }, "the rollback applied by every sink")

	h := rs.hub("r0")
	rs.forget("r0")
	h.Kill()
	c2 := hubclient.New(harness.Dial(t, rs.hub("r2").Addr))
	recs, err := c2.Generations(ctx, "")
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
