package cluster

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	etcdstore "github.com/confighub/confighub/internal/store/etcd"
	"github.com/confighub/confighub/test/etcdtest"
)

// etcdShared returns a new etcd store on cli, as each replica process has
// its own (a Store does not report its own writes to its Watch).
func etcdShared(t *testing.T, cli *clientv3.Client) shared {
	st := etcdstore.New(cli, etcdstore.WithPrefix("/t/"))
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// convergeTimes are the converge times of a stream's generations as a
// replica's GetStatus shows them (generation -> time; unset: not converged).
func convergeTimes(r *replica) map[uint64]time.Time { return times(r.hub.Status("")) }

// ownTimes are the converge times the replica's engine holds (what it
// writes to etcd when it leads the stream).
func ownTimes(r *replica) map[uint64]time.Time {
	s, _ := r.eng.View().Snapshot("default")
	return times(s, nil)
}

func times(s *confighubv1.GetStatusResponse, _ error) map[uint64]time.Time {
	out := map[uint64]time.Time{}
	for _, g := range s.GetGenerations() {
		if g.GetConvergeTime() != nil {
			out[g.GetGeneration()] = g.GetConvergeTime().AsTime()
		}
	}
	return out
}

// TestConvergenceSurvivesTakeoverAndRestart: on replicas sharing the etcd
// store, a generation's convergence is counted once summed over every
// replica that ever ran, and its converge time stays what the leader
// observed, when the leader stops and another takes the lead and when
// every replica restarts (the etcd store keeps the convergence records).
func TestConvergenceSurvivesTakeoverAndRestart(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	a := &applies{log: map[string][]string{}}
	r1 := startReplica(t, "r1", etcdShared(t, cli), cli, a)
	r2 := startReplica(t, "r2", etcdShared(t, cli), cli, a)
	waitReplicas(t, r1, r2)
	const n = 6
	putSinks(t, r1.hub, sinkNames(n)...)
	eventually(t, "both replicas list every sink", func() bool { return len(r2.hub.ListSinks("")) == n })

	var last uint64
	for i := 1; i <= 3; i++ {
		last = push(t, r1.hub, i).Generation
		eventually(t, fmt.Sprintf("generation %d converged on both replicas", last), func() bool {
			_, ok1 := convergeTimes(r1)[last]
			_, ok2 := convergeTimes(r2)[last]
			return ok1 && ok2
		})
	}
	before := convergeTimes(r1)
	eventually(t, "both replicas show the same converge times", func() bool { return fmt.Sprint(convergeTimes(r2)) == fmt.Sprint(before) })
	// The follower's engine took the leader's times from its view (what
	// it does within a mirror round trip; a leader stopped before that is
	// the crash window of the package doc).
	eventually(t, "both engines hold the leader's converge times", func() bool {
		return fmt.Sprint(ownTimes(r1)) == fmt.Sprint(before) && fmt.Sprint(ownTimes(r2)) == fmt.Sprint(before)
	})
	ms := []*replica{r1, r2}
	counted := func(gen uint64) int {
		c := 0
		for _, r := range ms {
			c += r.m.Count(gen)
		}
		return c
	}

	// The leader stops: the other takes the lead, keeps the times, and
	// counts nothing again.
	leader, other := r1, r2
	if Owner("stream/default", []string{"r1", "r2"}) == "r2" {
		leader, other = r2, r1
	}
	leader.stop()
	waitReplicas(t, other)
	g4 := push(t, other.hub, 4).Generation
	eventually(t, "generation 4 converged after the takeover", func() bool { _, ok := convergeTimes(other)[g4]; return ok })
	after := convergeTimes(other)
	for gen, at := range before {
		if !after[gen].Equal(at) {
			t.Errorf("generation %d: converge time %v after the takeover, %v before", gen, after[gen], at)
		}
	}
	for gen := uint64(1); gen <= g4; gen++ {
		if c := counted(gen); c != 1 {
			t.Errorf("generation %d observed converged %d times over the replicas, want once", gen, c)
		}
	}

	// Every replica restarts: the new one shows the recorded times and
	// observes nothing again.
	other.stop()
	r3 := startReplica(t, "r3", etcdShared(t, cli), cli, a)
	ms = append(ms, r3)
	waitReplicas(t, r3)
	eventually(t, "the restarted replica's engine has generation 4 converged", func() bool { _, ok := ownTimes(r3)[g4]; return ok })
	if got := ownTimes(r3)[g4]; !got.Equal(after[g4]) {
		t.Errorf("generation %d: converge time %v after the restart, %v before", g4, got, after[g4])
	}
	if c := r3.m.Count(g4); c != 0 {
		t.Errorf("the restarted replica observed generation %d converged %d times, want 0 (it converged before)", g4, c)
	}
}
