package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/engine/status/etcdstatus"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/harness"
)

// applies records which replica applied which generation to which sink.
type applies struct {
	mu  sync.Mutex
	log map[string][]string // sink -> "replica:gen"
	// hold and wait, when set, are what a "bad..." sink's apply of a
	// config holding "hold" or "wait" waits for.
	hold, wait chan struct{}
}

func (a *applies) add(sinkName, replica string, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log[sinkName] = append(a.log[sinkName], fmt.Sprintf("%s:%d", replica, gen))
}

func (a *applies) of(sinkName string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.log[sinkName]...)
}

// recSink records its applies; a sink named "bad..." rejects a config
// holding "reject" and holds the apply of one holding "hold" ("wait")
// until a.hold (a.wait) is closed.
type recSink struct {
	name, replica string
	a             *applies
}

func (s *recSink) Describe() sink.Capabilities { return sink.Capabilities{} }
func (s *recSink) Apply(ctx context.Context, cfg *config.Config) error {
	s.a.add(s.name, s.replica, cfg.Generation)
	if !strings.HasPrefix(s.name, "bad") {
		return nil
	}
	switch {
	case strings.Contains(string(cfg.Raw), "reject"):
		return &sink.Error{Code: "rejected", Message: "route r1 is invalid", Permanent: true, Body: []byte(`{"message":"invalid"}`)}
	case strings.Contains(string(cfg.Raw), "hold"):
		select {
		case <-s.a.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	case strings.Contains(string(cfg.Raw), "wait"):
		select {
		case <-s.a.wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// recKind registers the "rec" kind, whose sinks record into a as replica.
func recKind(t *testing.T, replica string, a *applies) *sink.Registry {
	t.Helper()
	reg := sink.NewRegistry()
	if err := reg.Register("rec", func(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
		return &recSink{name: spec.GetName(), replica: replica, a: a}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return reg
}

type replica struct {
	id   string
	rep  *Replica
	mem  *Membership
	hub  *hub.Hub
	eng  *engine.Engine
	m    *enginetest.Converged
	stop func()
}

// startReplica wires one replica as the command does: the engine with the
// placement as its ownership, the replica driving it, the hub on the
// engine's ports with the replica's shared status view.
func startReplica(t *testing.T, id string, st shared, cli *clientv3.Client, a *applies, opts ...status.Option) *replica {
	t.Helper()
	return startReplicaLog(t, id, st, cli, a, slog.New(slog.DiscardHandler), opts...)
}

// startReplicaLog is startReplica logging to log, as cmd/confighub does: one
// logger, naming the replica, for the engine, hub, membership and replica.
func startReplicaLog(t *testing.T, id string, st shared, cli *clientv3.Client, a *applies, log *slog.Logger, opts ...status.Option) *replica {
	t.Helper()
	return startReplicaReg(t, id, st, cli, recKind(t, id, a), log, opts...)
}

// startReplicaReg is startReplicaLog with the sink kinds of reg.
func startReplicaReg(t *testing.T, id string, st shared, cli *clientv3.Client, reg *sink.Registry, log *slog.Logger, opts ...status.Option) *replica {
	t.Helper()
	m := &enginetest.Converged{}
	place := NewPlacement(id)
	var rep *Replica
	eng := engine.New(reg, engine.WithRecorder(st), engine.WithOwnership(place), engine.WithMetrics(m), engine.WithLogger(log),
		engine.WithNewStream(func(s string) { rep.Follow(s) }))
	mem := NewMembership(cli, "/t", id, 2*time.Second, log)
	rep = New(eng, place, st, cli, mem, "/t", Options{Logger: log,
		Status: []etcdstatus.Option{etcdstatus.WithInterval(20 * time.Millisecond), etcdstatus.WithBrokerOptions(opts...)}})
	ports := hub.PortsOf(eng)
	ports.Status = rep.View()
	ports.Diagnostics = rep.Diagnostics()
	h := hub.New(st, ports, hub.WithLogger(log))
	if err := h.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { rep.Run(ctx) })
	var once sync.Once
	r := &replica{id: id, rep: rep, mem: mem, hub: h, eng: eng, m: m, stop: func() { once.Do(func() { cancel(); wg.Wait(); eng.Stop() }) }}
	t.Cleanup(r.stop)
	return r
}

// eventually polls an observable condition of the running replicas
// (etcd round trips), bounded.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, cond, "%s", what)
}

func waitReplicas(t *testing.T, rs ...*replica) {
	t.Helper()
	for _, r := range rs {
		eventually(t, r.id+" placed the sinks over every replica", func() bool {
			p := r.rep.place
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.member && len(p.members) == len(rs)
		})
	}
}

func allApplied(r *replica, n int, gen uint64) bool {
	st, err := r.hub.Status("")
	if err != nil || len(st.GetSinks()) != n {
		return false
	}
	for _, s := range st.GetSinks() {
		if s.GetAppliedGeneration() < gen {
			return false
		}
	}
	return true
}

func push(t *testing.T, h *hub.Hub, n int) hub.PushResult {
	t.Helper()
	res, err := h.Push(context.Background(), hub.PushInput{Config: fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":"s%d","host":"h"}]}`, n)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func putSinks(t *testing.T, h *hub.Hub, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, _, err := h.PutSink(context.Background(), &confighubv1.Sink{Name: name, Kind: "rec"}); err != nil {
			t.Fatal(err)
		}
	}
}

func sinkNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i)
	}
	return out
}

// startPair starts replicas r1 and r2 on one etcd and shared store.
func startPair(t *testing.T) (r1, r2 *replica, a *applies) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	st := newSharedStore()
	a = &applies{log: map[string][]string{}}
	return startReplica(t, "r1", st, cli, a), startReplica(t, "r2", st, cli, a), a
}

func TestReplicasPartitionAndMoveSinks(t *testing.T) {
	r1, r2, a := startPair(t)
	const n = 8
	putSinks(t, r1.hub, sinkNames(n)...)
	eventually(t, "both replicas list every sink", func() bool { return len(r2.hub.ListSinks("")) == n })
	waitReplicas(t, r1, r2)
	g1 := push(t, r2.hub, 1)
	// Status of every sink is visible from both replicas, whoever owns it.
	eventually(t, "every sink applied generation 1 (seen from r1)", func() bool { return allApplied(r1, n, g1.Generation) })
	eventually(t, "every sink applied generation 1 (seen from r2)", func() bool { return allApplied(r2, n, g1.Generation) })

	owner := map[string]string{}
	onR2 := 0
	for _, name := range sinkNames(n) {
		got := a.of(name)
		if len(got) != 1 {
			t.Fatalf("sink %s applied %v, want generation 1 applied once, by one replica", name, got)
		}
		owner[name] = got[0][:2]
		if owner[name] == "r2" {
			onR2++
		}
		if want := Owner("sink/"+name, []string{"r1", "r2"}); owner[name] != want {
			t.Errorf("sink %s ran on %s, rendezvous owner is %s", name, owner[name], want)
		}
	}
	if onR2 == 0 || onR2 == n {
		t.Fatalf("all %d sinks ran on one replica (r2 has %d)", n, onR2)
	}

	// r2 leaves: r1 takes its sinks over, seeded with their applied
	// generation (no second apply of generation 1), and applies the next.
	r2.stop()
	g2 := push(t, r1.hub, 2)
	eventually(t, "every sink applied generation 2", func() bool { return allApplied(r1, n, g2.Generation) })
	for _, name := range sinkNames(n) {
		want := []string{owner[name] + ":1", "r1:2"}
		if got := a.of(name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sink %s applies %v, want %v", name, got, want)
		}
	}
	eventually(t, "generation 2 applied by every sink in the shared generation status", func() bool {
		s, _ := r1.hub.Status("")
		g := s.GetGenerations()
		return len(g) > 0 && g[len(g)-1].GetGeneration() == g2.Generation && g[len(g)-1].GetSinksApplied() == n
	})

	// A deleted sink disappears from the status of every replica.
	if err := r1.hub.DeleteSink(context.Background(), "s0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "s0 gone from status", func() bool {
		s, _ := r1.hub.Status("")
		return len(s.GetSinks()) == n-1
	})
}

// The convergence metric counts each generation once over all replicas,
// whichever replica runs the sinks; GetStatus answers the same on both.
func TestConvergenceCountedOnceAcrossReplicas(t *testing.T) {
	r1, r2, _ := startPair(t)
	const n = 9
	putSinks(t, r1.hub, sinkNames(n)...)
	waitReplicas(t, r1, r2)
	var last uint64
	for i := 1; i <= 5; i++ {
		last = push(t, r1.hub, i).Generation
		eventually(t, fmt.Sprintf("generation %d converged (seen from r2)", last), func() bool {
			s, _ := r2.hub.Status("")
			g := s.GetGenerations()
			return len(g) > 0 && g[len(g)-1].GetGeneration() == last && g[len(g)-1].GetConvergeTime() != nil
		})
	}
	for gen := uint64(1); gen <= last; gen++ {
		if c := r1.m.Count(gen) + r2.m.Count(gen); c != 1 {
			t.Errorf("generation %d: convergence observed %d times (r1 %d, r2 %d), want once", gen, c, r1.m.Count(gen), r2.m.Count(gen))
		}
	}
	eventually(t, "both replicas answer GetStatus the same", func() bool {
		s1, _ := r1.hub.Status("")
		s2, _ := r2.hub.Status("")
		return s1.GetRevision() == s2.GetRevision() && fmt.Sprint(s1) == fmt.Sprint(s2)
	})
}

func TestWatchResumesAcrossReplicas(t *testing.T) {
	r1, r2, _ := startPair(t)
	putSinks(t, r1.hub, sinkNames(4)...)
	waitReplicas(t, r1, r2)
	g1 := push(t, r1.hub, 1)
	eventually(t, "generation 1 applied", func() bool { return allApplied(r1, 4, g1.Generation) })

	ctx, cancel := context.WithCancel(context.Background())
	w := r1.hub.Watch(ctx, "", 0)
	first := <-w
	if first.GetSnapshotReason() != status.ReasonStart || len(first.GetSnapshot().GetSinks()) != 4 {
		t.Fatalf("first message %v, want a start snapshot of 4 sinks", first)
	}
	from := first.GetRevision()
	cancel()
	for range w {
	}

	// Changes after the snapshot, then a resume on the other replica.
	g2 := push(t, r1.hub, 2)
	eventually(t, "generation 2 applied", func() bool { return allApplied(r2, 4, g2.Generation) })
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	w2 := r2.hub.Watch(ctx2, "", from)
	applied := map[string]bool{}
	last := from
	for len(applied) < 4 {
		select {
		case m := <-w2:
			if m.GetSnapshot() != nil {
				t.Fatalf("resume from %d got a snapshot (%s), want the changes", from, m.GetSnapshotReason())
			}
			if m.GetRevision() < last || m.GetRevision() <= from {
				t.Fatalf("revision %d after %d (resumed from %d)", m.GetRevision(), last, from)
			}
			last = m.GetRevision()
			if s := m.GetSink(); s != nil && s.GetAppliedGeneration() == g2.Generation {
				applied[s.GetSink()] = true
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("resumed watch saw generation 2 applied by %d sinks, want 4", len(applied))
		}
	}
}

func TestGuardFailsFastWhenNotReady(t *testing.T) {
	st := newSharedStore()
	ready := false
	g := Guard(st, func() bool { return ready }, time.Second)
	_, _, err := g.CommitConfig(context.Background(), config.New("default", 0, "h", config.FormatJSON, []byte("{}"), nil, nil, time.Time{}), 0)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("commit while not ready: %v, want ErrNotReady", err)
	}
	if _, err := st.GetStream(context.Background(), "default"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused commit stored something: %v", err)
	}
	ready = true
	if _, _, err := g.CommitConfig(context.Background(), config.New("default", 0, "h", config.FormatJSON, []byte("{}"), nil, nil, time.Time{}), 0); err != nil {
		t.Fatalf("commit when ready: %v", err)
	}
}

// TestHandOverIsLoggedAsSuch: when a replica joins, the sinks the first one
// gives it are logged there as handed over to the new owner, never as
// deleted (they go on running), and no line names the replica twice.
func TestHandOverIsLoggedAsSuch(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	st := newSharedStore()
	a := &applies{log: map[string][]string{}}
	rec := harness.NewLogRecorder(t, slog.LevelDebug)
	r1 := startReplicaLog(t, "r1", st, cli, a, rec.Logger().With("replica", "r1"))
	waitReplicas(t, r1)
	const n = 6
	putSinks(t, r1.hub, sinkNames(n)...)
	g := push(t, r1.hub, 1)
	eventually(t, "r1 applied every sink", func() bool { return allApplied(r1, n, g.Generation) })
	r2 := startReplica(t, "r2", st, cli, a)
	waitReplicas(t, r1, r2)
	var moved []string
	for i := range n {
		if name := fmt.Sprintf("s%d", i); Owner("sink/"+name, []string{"r1", "r2"}) == "r2" {
			moved = append(moved, name)
		}
	}
	if len(moved) == 0 {
		t.Fatal("no sink moves to r2: choose other names")
	}
	eventually(t, "r1 handed its sinks over", func() bool {
		lines := strings.Join(rec.Lines(), "\n")
		for _, name := range moved {
			if !strings.Contains(lines, "INFO sink handed over replica=r1 sink="+name+" kind=rec stream=default to=r2") {
				return false
			}
		}
		return true
	})
	if lines := strings.Join(rec.Lines(), "\n"); strings.Contains(lines, "sink deleted") {
		t.Errorf("a hand-over logged as a deletion:\n%s", lines)
	}
}
