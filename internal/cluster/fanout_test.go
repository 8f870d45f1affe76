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

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/harness"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/etcd/etcdtest"
	"github.com/confighub/confighub/sink"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// applies records which replica applied which generation to which sink.
type applies struct {
	mu  sync.Mutex
	log map[string][]string // sink -> "replica:gen"
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

type recSink struct {
	name, replica string
	a             *applies
}

func (s *recSink) Describe() sink.Capabilities { return sink.Capabilities{} }
func (s *recSink) Apply(_ context.Context, cfg *config.Config) error {
	s.a.add(s.name, s.replica, cfg.Generation)
	return nil
}

type replica struct {
	id   string
	fan  *Fanout
	hub  *hub.Hub
	stop func()
}

func startReplica(t *testing.T, id string, st *sharedStore, cli *clientv3.Client, a *applies, opts ...Option) *replica {
	t.Helper()
	return startReplicaLog(t, id, st, cli, a, slog.New(slog.DiscardHandler), opts...)
}

// startReplicaLog is startReplica logging to log, as cmd/confighub does: one
// logger, naming the replica, for the engine, hub, membership and fan-out.
func startReplicaLog(t *testing.T, id string, st *sharedStore, cli *clientv3.Client, a *applies, log *slog.Logger, opts ...Option) *replica {
	t.Helper()
	reg := sink.NewRegistry()
	if err := reg.Register("rec", func(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
		return &recSink{name: spec.GetName(), replica: id, a: a}, nil
	}); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(reg, engine.WithRecorder(st), engine.WithLogger(log))
	mem := NewMembership(cli, "/t", id, 2*time.Second, WithMembershipLogger(log))
	fan := New(eng, st, st, cli, mem, "/t", append([]Option{WithStatusInterval(20 * time.Millisecond), WithWatchBuffer(64), WithLogger(log)}, opts...)...)
	h := hub.New(st, fan, hub.WithLogger(log))
	if err := h.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { fan.Run(ctx) })
	var once sync.Once
	r := &replica{id: id, fan: fan, hub: h, stop: func() { once.Do(func() { cancel(); wg.Wait(); eng.Stop() }) }}
	t.Cleanup(r.stop)
	return r
}

// eventually polls an observable condition of the running replicas
// (etcd round trips), bounded.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, cond, "%s", what)
}

func waitBothMembers(t *testing.T, rs ...*replica) {
	t.Helper()
	for _, r := range rs {
		eventually(t, r.id+" sees every replica", func() bool {
			ms, reg := r.fan.mem.Members()
			return reg && len(ms) == len(rs)
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

func TestFanoutPartitionsAndMovesSinks(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	st := newSharedStore()
	a := &applies{log: map[string][]string{}}
	r1 := startReplica(t, "r1", st, cli, a)
	r2 := startReplica(t, "r2", st, cli, a)
	const n = 8
	for i := range n {
		if _, _, err := r1.hub.PutSink(context.Background(), &confighubv1.Sink{Name: fmt.Sprintf("s%d", i), Kind: "rec"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both replicas list every sink", func() bool { return len(r2.hub.ListSinks("")) == n })
	waitBothMembers(t, r1, r2)
	g1 := push(t, r2.hub, 1)
	// Status of every sink is visible from both replicas, whoever owns it.
	eventually(t, "every sink applied generation 1 (seen from r1)", func() bool { return allApplied(r1, n, g1.Generation) })
	eventually(t, "every sink applied generation 1 (seen from r2)", func() bool { return allApplied(r2, n, g1.Generation) })

	owner := map[string]string{}
	onR2 := 0
	for i := range n {
		name := fmt.Sprintf("s%d", i)
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
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		want := []string{owner[name] + ":1", "r1:2"}
		if got := a.of(name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sink %s applies %v, want %v", name, got, want)
		}
	}
	st2, _ := r1.hub.Status("")
	if g := st2.GetGenerations(); len(g) == 0 || g[len(g)-1].GetGeneration() != g2.Generation || g[len(g)-1].GetSinksApplied() != n {
		t.Errorf("generation status %v, want generation %d applied by %d sinks", g, g2.Generation, n)
	}

	// A deleted sink disappears from the status of every replica.
	if err := r1.hub.DeleteSink(context.Background(), "s0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "s0 gone from status", func() bool {
		s, _ := r1.hub.Status("")
		return len(s.GetSinks()) == n-1
	})
	if err := r1.fan.DeleteSink("s0"); !errors.Is(err, engine.ErrSinkNotFound) {
		t.Errorf("deleting an unknown sink: %v", err)
	}
}

func TestWatchResumesAcrossReplicas(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	st := newSharedStore()
	a := &applies{log: map[string][]string{}}
	r1 := startReplica(t, "r1", st, cli, a)
	r2 := startReplica(t, "r2", st, cli, a)
	for i := range 4 {
		if _, _, err := r1.hub.PutSink(context.Background(), &confighubv1.Sink{Name: fmt.Sprintf("s%d", i), Kind: "rec"}); err != nil {
			t.Fatal(err)
		}
	}
	waitBothMembers(t, r1, r2)
	g1 := push(t, r1.hub, 1)
	eventually(t, "generation 1 applied", func() bool { return allApplied(r1, 4, g1.Generation) })

	ctx, cancel := context.WithCancel(context.Background())
	w := r1.hub.Watch(ctx, "", 0)
	first := <-w
	if first.GetSnapshotReason() != ReasonStart || len(first.GetSnapshot().GetSinks()) != 4 {
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
	cancel2()

	// Once etcd compacted past a revision, resuming from it is a gap.
	rev, err := cli.Get(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(context.Background(), rev.Header.Revision); err != nil {
		t.Fatal(err)
	}
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	m := <-r2.hub.Watch(ctx3, "", from)
	if m.GetSnapshotReason() != ReasonResumeGap || len(m.GetSnapshot().GetSinks()) != 4 {
		t.Fatalf("resume from a compacted revision: %v, want a resume-gap snapshot", m)
	}
}

func TestGuardFailsFastWhenNotReady(t *testing.T) {
	st := newSharedStore()
	ready := false
	g := Guard(st, func() bool { return ready }, time.Second)
	_, _, err := g.CommitConfig(context.Background(), store.Stream{Name: "default", Hash: "h", Config: []byte("{}")}, 0)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("commit while not ready: %v, want ErrNotReady", err)
	}
	if _, err := st.GetStream(context.Background(), "default"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused commit stored something: %v", err)
	}
	ready = true
	if _, _, err := g.CommitConfig(context.Background(), store.Stream{Name: "default", Hash: "h", Config: []byte("{}")}, 0); err != nil {
		t.Fatalf("commit when ready: %v", err)
	}
}

// TestSlowWatcherGetsSnapshot: a watcher that does not read is never waited
// for; once it reads it gets a "slow-watcher" snapshot and then the changes,
// ending on the current state.
func TestSlowWatcherGetsSnapshot(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	st := newSharedStore()
	a := &applies{log: map[string][]string{}}
	r := startReplica(t, "r1", st, cli, a, WithWatchBuffer(4))
	waitBothMembers(t, r)
	for i := range 4 {
		if _, _, err := r.hub.PutSink(context.Background(), &confighubv1.Sink{Name: fmt.Sprintf("s%d", i), Kind: "rec"}); err != nil {
			t.Fatal(err)
		}
	}
	g := push(t, r.hub, 1)
	eventually(t, "generation 1 applied", func() bool { return allApplied(r, 4, g.Generation) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := r.hub.Watch(ctx, "", 0)
	for i := 2; i <= 6; i++ {
		g = push(t, r.hub, i)
		eventually(t, fmt.Sprintf("generation %d applied", g.Generation), func() bool { return allApplied(r, 4, g.Generation) })
	}
	state := map[string]uint64{}
	sawSlow := false
	done := func() bool {
		for i := range 4 {
			if state[fmt.Sprintf("s%d", i)] != g.Generation {
				return false
			}
		}
		return true
	}
	for !done() {
		select {
		case m := <-slow:
			if snap := m.GetSnapshot(); snap != nil {
				sawSlow = sawSlow || m.GetSnapshotReason() == ReasonSlowWatcher
				clear(state)
				for _, s := range snap.GetSinks() {
					state[s.GetSink()] = s.GetAppliedGeneration()
				}
			}
			if s := m.GetSink(); s != nil {
				state[s.GetSink()] = s.GetAppliedGeneration()
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the slow watcher never reached generation %d: %v", g.Generation, state)
		}
	}
	if !sawSlow {
		t.Fatal("a watcher with a buffer of 4 that read nothing during 5 pushes got no slow-watcher snapshot")
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
	waitBothMembers(t, r1)
	const n = 6
	for i := range n {
		if _, _, err := r1.hub.PutSink(context.Background(), &confighubv1.Sink{Name: fmt.Sprintf("s%d", i), Kind: "rec"}); err != nil {
			t.Fatal(err)
		}
	}
	g := push(t, r1.hub, 1)
	eventually(t, "r1 applied every sink", func() bool { return allApplied(r1, n, g.Generation) })
	r2 := startReplica(t, "r2", st, cli, a)
	waitBothMembers(t, r1, r2)
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
			if !strings.Contains(lines, "INFO cluster: sink handed over replica=r1 sink="+name+" stream=default to=r2") {
				return false
			}
		}
		return true
	})
	if lines := strings.Join(rec.Lines(), "\n"); strings.Contains(lines, "sink deleted") {
		t.Errorf("a hand-over logged as a deletion:\n%s", lines)
	}
}
