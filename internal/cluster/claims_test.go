package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/test/etcdtest"
)

// TestClaimsFollowTheNewestRevision: a claim older than the one known (a
// watch event behind a claim made here) changes nothing; a release hands
// the sink back to rendezvous; a listing keeps the claims made since.
func TestClaimsFollowTheNewestRevision(t *testing.T) {
	p := NewPlacement("r1")
	p.set([]string{"r1", "r2"}, true)
	if p.OwnsSink("x") {
		t.Fatal("owns a sink before the claims were read")
	}
	p.load(map[string]claim{"dp": {owner: "r2", rev: 4}}, 5)
	p.take("dp", claim{owner: "r1", rev: 10})
	p.take("dp", claim{owner: "r2", rev: 8})
	if got := p.OwnerOf("dp"); got != "r1" {
		t.Fatalf("owner %q after a stale claim, want r1", got)
	}
	p.load(map[string]claim{}, 9)
	if !p.OwnsSink("dp") {
		t.Fatal("a listing older than the claim made here dropped it")
	}
	p.take("dp", claim{owner: "r2", rev: 12})
	if p.OwnsSink("dp") || p.OwnerOf("dp") != "r2" {
		t.Fatalf("owner %q after r2's newer claim", p.OwnerOf("dp"))
	}
	p.take("dp", claim{rev: 13})
	if got, want := p.OwnerOf("dp"), Owner("sink/dp", []string{"r1", "r2"}); got != want {
		t.Fatalf("owner %q of a released claim, want the rendezvous owner %q", got, want)
	}
}

// TestDataPlanesOwnedByConnection: a data plane's sink runs on the replica
// it connected to (Replica.PutSink claims it), whatever rendezvous says,
// and every replica lists it; a later claim moves it at once; when its
// replica leaves (its lease and claims with it) the rendezvous owner runs
// it; its deletion (the purge) removes it, its status and its claim
// everywhere.
func TestDataPlanesOwnedByConnection(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	st := newSharedStore()
	a := &applies{log: map[string][]string{}}
	r1, r2 := startReplica(t, "r1", st, cli, a), startReplica(t, "r2", st, cli, a)
	waitReplicas(t, r1, r2)
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("dp-%d", i); Owner("sink/"+n, []string{"r1", "r2"}) == "r2" {
			name = n
		}
	}
	spec := &confighubv1.Sink{Name: name, Kind: "rec"}
	owners := func(want string) func() bool {
		return func() bool { return r1.rep.place.OwnerOf(name) == want && r2.rep.place.OwnerOf(name) == want }
	}
	applied := func(want ...string) func() bool {
		return func() bool { return slices.Equal(a.of(name), want) }
	}

	push(t, r1.hub, 1)
	if _, _, err := r1.rep.PutSink(spec); err != nil {
		t.Fatal(err)
	}
	eventually(t, "r1 runs the data plane it claimed", applied("r1:1"))
	eventually(t, "both replicas place it on r1, list it and show it applied", func() bool {
		return owners("r1")() && len(r2.hub.ListSinks("")) == 1 && len(r1.hub.ListSinks("")) == 1 && allApplied(r2, 1, 1)
	})

	if _, _, err := r2.rep.PutSink(spec); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the data plane moved to r2, which claimed it later", owners("r2"))
	eventually(t, "r1's claim watch handed it over", func() bool { _, runs := r1.eng.LastApplied(name); return !runs })
	push(t, r1.hub, 2)
	eventually(t, "r2 applies generation 2", applied("r1:1", "r2:2"))

	r2.stop()
	push(t, r1.hub, 3)
	eventually(t, "r1 runs it once r2 left", applied("r1:1", "r2:2", "r1:3"))

	if err := r1.rep.DeleteSink(name); err != nil {
		t.Fatal(err)
	}
	sinks, err := st.ListSinks(context.Background())
	if err != nil || len(sinks) != 0 || len(r1.hub.ListSinks("")) != 0 {
		t.Fatalf("after the purge: stored %v (%v), listed %v", sinks, err, r1.hub.ListSinks(""))
	}
	eventually(t, "its status is gone", func() bool { s, _ := r1.hub.Status(""); return len(s.GetSinks()) == 0 })
	resp, err := cli.Get(context.Background(), "/t/dp/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("claims left: %v (%v)", resp, err)
	}
}
