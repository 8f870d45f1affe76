package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/test/enginetest"
)

// placement is the ownership of two replicas "A" and "B": which one runs
// each sink, and which one leads every stream.
type placement struct {
	mu     sync.Mutex
	owner  map[string]string
	leader string
}

func (p *placement) set(sink, replica string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owner[sink] = replica
}

type replicaOf struct {
	p  *placement
	id string
}

func (r replicaOf) OwnsSink(name string) bool {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.p.owner[name] == r.id
}

func (r replicaOf) OwnsStream(string) bool { return r.p.leader == r.id }

func (r replicaOf) OwnerOf(name string) string {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.p.owner[name]
}

type replica struct {
	*harness
	m *enginetest.Converged
}

// twoReplicas runs engines A and B over the same sinks, each told the
// other's sink statuses (what the etcd writer and mirror do between
// replicas).
func twoReplicas(t *testing.T, p *placement) (a, b replica) {
	mk := func(id string) replica {
		m := &enginetest.Converged{}
		return replica{newHarness(t, engine.WithOwnership(replicaOf{p, id}), engine.WithMetrics(m)), m}
	}
	a, b = mk("A"), mk("B")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	relay := func(from, to *engine.Engine) {
		ch := from.View().Watch(ctx, "default", 0)
		wg.Go(func() {
			for ev := range ch {
				sinks := ev.GetSnapshot().GetSinks()
				if st := ev.GetSink(); st != nil {
					sinks = append(sinks, st)
				}
				for _, st := range sinks {
					// Only the owner's statuses reach the shared view.
					if (replicaOf{p, "A"}).OwnsSink(st.GetSink()) == (from == a.e) {
						to.ObserveSink(st.GetSink(), st)
					}
				}
			}
		})
	}
	relay(a.e, b.e)
	relay(b.e, a.e)
	t.Cleanup(func() { cancel(); wg.Wait() })
	return a, b
}

func putBoth(t *testing.T, a, b replica, name string, o *confighubv1.SinkOptions) (*enginetest.Sink, *enginetest.Sink) {
	t.Helper()
	return a.put(name, kindTest, o), b.put(name, kindTest, o)
}

// A wave placed on another replica than the wave below it waits for that
// wave's statuses from the shared view, then applies; the generation's
// counts cover every sink on both replicas, and only the stream's leader
// records its convergence.
func TestOwnershipSplitsGatedStream(t *testing.T) {
	p := &placement{owner: map[string]string{"w0-a": "A", "w0-b": "A", "w1": "B"}, leader: "A"}
	a, b := twoReplicas(t, p)
	w0a, _ := putBoth(t, a, b, "w0-a", nil)
	putBoth(t, a, b, "w0-b", nil)
	_, w1 := putBoth(t, a, b, "w1", &confighubv1.SinkOptions{Wave: 1})
	if n := len(a.e.ListSinks("")); n != 3 {
		t.Fatalf("replica A lists %d sinks, want every sink (3)", n)
	}
	w0a.Set(enginetest.Behavior{Block: true})
	a.pushN(1)
	b.pushN(1)
	st := b.awaitState("w1", waiting, 1)
	if !strings.Contains(st.GetReason(), "waves below 1") || w1.Calls() != 0 {
		t.Fatalf("wave 1 on B: %v, %d calls", st, w1.Calls())
	}
	a.release(w0a)
	b.awaitApplied("w1", 1)
	for _, r := range []replica{a, b} {
		r.await("", "3 of 3 applied", func(s *confighubv1.GetStatusResponse) bool {
			g := s.GetGenerations()
			return len(g) == 1 && g[0].GetSinksApplied() == 3 && g[0].GetSinksTotal() == 3
		})
	}
	if a.m.Count(1) != 1 || b.m.Count(1) != 0 {
		t.Fatalf("convergence recorded %d times on the leader, %d on the other; want once in all", a.m.Count(1), b.m.Count(1))
	}
}

// A sink handed to another replica resumes there from its last shared
// status: the generation it applied is not applied again, the next one is
// applied by the new owner only.
func TestReownResumesFromSharedStatus(t *testing.T) {
	p := &placement{owner: map[string]string{"s": "A"}, leader: "A"}
	a, b := twoReplicas(t, p)
	sa, _ := putBoth(t, a, b, "s", nil)
	a.pushN(1)
	b.pushN(1)
	a.awaitApplied("s", 1)
	b.await("", "B counts the peer's apply", func(s *confighubv1.GetStatusResponse) bool {
		g := s.GetGenerations()
		return len(g) == 1 && g[0].GetSinksApplied() == 1
	})
	if b.fleet.Builds() != 0 {
		t.Fatal("B built a sink it does not own")
	}
	p.set("s", "B")
	if errs := a.e.Reown(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if errs := b.e.Reown(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if !sa.Closed() {
		t.Fatal("A still runs the sink it lost")
	}
	b.awaitApplied("s", 1)
	sb := b.fleet.Sink("s")
	if sb.Calls() != 0 {
		t.Fatalf("the new owner applied generation 1 again (%d calls)", sb.Calls())
	}
	a.pushN(1)
	b.pushN(1)
	b.awaitApplied("s", 2)
	if sb.Calls() != 1 || sa.Calls() != 1 {
		t.Fatalf("calls: new owner %d (want 1), old owner %d (want 1)", sb.Calls(), sa.Calls())
	}
}
