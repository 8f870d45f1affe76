package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/etcd"
	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore(t *testing.T, cli *clientv3.Client, opts ...etcd.Option) *etcd.Store {
	s := etcd.New(cli, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func prefixFor(t *testing.T) string { return "/t/" + strings.ReplaceAll(t.Name(), "/", "_") + "/" }

func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	storetest.Run(t, func(t *testing.T, r store.Retention) store.Store {
		return newStore(t, cli, etcd.WithPrefix(prefixFor(t)), etcd.WithRetention(r))
	}, storetest.WithReopen(func(t *testing.T, s store.Store, r store.Retention) store.Store {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// A new client and store: what another replica, or this one after
		// a restart, sees.
		return newStore(t, srv.Client(t), etcd.WithPrefix(prefixFor(t)), etcd.WithRetention(r))
	}))
}

// Small chunks exercise the staged path (many chunks) on small configs.
func TestConformanceSmallChunks(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	storetest.Run(t, func(t *testing.T, r store.Retention) store.Store {
		return newStore(t, cli, etcd.WithPrefix(prefixFor(t)), etcd.WithChunkSize(4096), etcd.WithRetention(r))
	}, storetest.WithLargeConfig(40<<10))
}

func keys(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// Two replicas (two clients, two Store values) on one etcd: concurrent
// commits never share a generation, and expected_generation holds across
// them.
func TestReplicasShareGenerations(t *testing.T) {
	srv := etcdtest.Start(t)
	a := newStore(t, srv.Client(t))
	b := newStore(t, srv.Client(t))
	ctx := context.Background()
	const each = 10
	var (
		mu   sync.Mutex
		gens = map[uint64]string{}
		wg   sync.WaitGroup
	)
	for name, s := range map[string]*etcd.Store{"a": a, "b": b} {
		for w := range 2 {
			wg.Go(func() {
				for i := range each {
					got, _, err := s.CommitConfig(ctx, storetest.NewStream("default", []byte(fmt.Sprintf(`{"_format_version":"3.0","r":"%s-%d-%d"}`, name, w, i))), 0)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
					mu.Lock()
					if prev, dup := gens[got.Generation]; dup {
						t.Errorf("generation %d handed out to %s and %s", got.Generation, prev, name)
					}
					gens[got.Generation] = name
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(gens) != 4*each {
		t.Fatalf("%d distinct generations, want %d", len(gens), 4*each)
	}
	cur := storetest.Get(t, b, "default")
	if cur.Generation != 4*each {
		t.Fatalf("final generation %d, want %d", cur.Generation, 4*each)
	}
	// a's view is stale once b commits.
	if _, _, err := b.CommitConfig(ctx, storetest.NewStream("default", storetest.Cfg(1)), cur.Generation); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.CommitConfig(ctx, storetest.NewStream("default", storetest.Cfg(2)), cur.Generation); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale expected from the other replica: %v, want ErrConflict", err)
	}
	// Only the kept generations' chunks are left (one chunk each).
	if k := keys(t, srv.Client(t), etcd.DefaultPrefix+"configs/"); len(k) != min(4*each+1, store.DefaultHistory) {
		t.Fatalf("config chunks left after the race: %v", k)
	}
}

// A config of several MiB goes through an etcd with the default 1.5 MiB
// request limit (BenchmarkCommit does 20 MiB); chunks of generations no
// longer kept (here: all but the current one), and chunks of an attempt
// that crashed before its commit, are deleted by the next commit.
func TestLargeConfigChunks(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	s := newStore(t, cli, etcd.WithRetention(store.Retention{History: 1}))
	ctx := context.Background()
	big := append(bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16), "tail"...)
	got, _, err := s.CommitConfig(ctx, storetest.NewStream("default", big), 0)
	if err != nil {
		t.Fatalf("commit 8 MiB: %v", err)
	}
	if back := storetest.Get(t, s, "default"); !bytes.Equal(back.Raw, big) || back.Generation != got.Generation {
		t.Fatalf("8 MiB round trip: gen %d, %d bytes", back.Generation, len(back.Raw))
	}
	if n := len(keys(t, cli, etcd.DefaultPrefix+"configs/default/")); n != 9 {
		t.Fatalf("%d chunks for 8 MiB + 4 bytes, want 9 (1 MiB each)", n)
	}
	// A replica that died after staging generation 2.
	dead := etcd.DefaultPrefix + "configs/default/" + fmt.Sprintf("%020d", 2) + "-dead/000000"
	if _, err := cli.Put(ctx, dead, "partial"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CommitConfig(ctx, storetest.NewStream("default", storetest.Cfg(1)), 1); err != nil {
		t.Fatal(err)
	}
	k := keys(t, cli, etcd.DefaultPrefix+"configs/")
	if len(k) != 1 || !strings.Contains(k[0], fmt.Sprintf("%020d-", 2)) || strings.Contains(k[0], "dead") {
		t.Fatalf("chunks after replacing the large config: %v, want one chunk of generation 2", k)
	}
}

// A commit acknowledged before etcd restarts is there after.
func TestSurvivesEtcdRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx := context.Background()
	s := newStore(t, srv.Client(t))
	want, _, err := s.CommitConfig(ctx, storetest.NewStream("default", storetest.Cfg(5)), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	s2 := newStore(t, srv.Client(t))
	got, err := s2.GetStream(ctx, "default")
	if err != nil || got.Hash != want.Hash || got.Generation != 1 {
		t.Fatalf("after etcd restart: %+v, %v", got, err)
	}
}

func recv(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return store.Event{}
}

func TestWatchOtherReplica(t *testing.T) {
	srv := etcdtest.Start(t)
	a := newStore(t, srv.Client(t))
	b := newStore(t, srv.Client(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := a.Watch(ctx)

	// a's own commit is not reported; b's is, with its bytes.
	if _, _, err := a.CommitConfig(ctx, storetest.NewStream("default", storetest.Cfg(1)), 0); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 3<<20)
	if _, _, err := b.CommitConfig(ctx, storetest.NewStream("default", big), 1); err != nil {
		t.Fatal(err)
	}
	e := recv(t, ch)
	if e.Config == nil || e.Config.Generation != 2 || !bytes.Equal(e.Config.Raw, big) {
		t.Fatalf("first event %+v, want b's generation 2 with its 3 MiB", e)
	}
	sp := &confighubv1.Sink{Name: "gw-0", Kind: "file", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "/x"}}}
	if err := a.PutSink(ctx, sp); err != nil { // own: not reported
		t.Fatal(err)
	}
	sp2 := &confighubv1.Sink{Name: "gw-1", Kind: "file", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "/y"}}}
	if err := b.PutSink(ctx, sp2); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, ch); e.SinkPut == nil || e.SinkPut.GetName() != "gw-1" || e.SinkPut.GetFile().GetPath() != "/y" {
		t.Fatalf("event %+v, want SinkPut gw-1", e)
	}
	if err := b.DeleteSink(ctx, "gw-0"); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, ch); e.SinkDeleted != "gw-0" {
		t.Fatalf("event %+v, want SinkDeleted gw-0", e)
	}
	cancel()
	for range ch { //nolint:revive // drain until closed
	}
}

// List then Watch misses nothing committed in between.
func TestWatchAfterListHasNoGap(t *testing.T) {
	srv := etcdtest.Start(t)
	a := newStore(t, srv.Client(t))
	b := newStore(t, srv.Client(t))
	ctx := context.Background()
	if _, err := a.ListStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.CommitConfig(ctx, storetest.NewStream("s1", storetest.Cfg(1)), 0); err != nil {
		t.Fatal(err)
	}
	ch := a.Watch(ctx)
	if e := recv(t, ch); e.Config == nil || e.Config.Stream != "s1" || e.Config.Generation != 1 {
		t.Fatalf("event %+v, want s1 generation 1 committed between list and watch", e)
	}
	// Close ends the watch.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
}

// When the history the watch needs is compacted, it sends the current
// state again.
func TestWatchResyncsAfterCompaction(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	a := newStore(t, srv.Client(t))
	b := newStore(t, cli)
	ctx := context.Background()
	if _, err := a.ListSinks(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := b.CommitConfig(ctx, storetest.NewStream("s", storetest.Cfg(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.PutSink(ctx, &confighubv1.Sink{Name: "gw", Kind: "file", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "/p"}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	ch := a.Watch(ctx)
	e := recv(t, ch)
	if e.Config == nil || e.Config.Stream != "s" || e.Config.Generation != 3 {
		t.Fatalf("first event after compaction %+v, want stream s generation 3", e)
	}
	if e := recv(t, ch); e.SinkPut == nil || e.SinkPut.GetName() != "gw" {
		t.Fatalf("second event %+v, want SinkPut gw", e)
	}
	// And it keeps following.
	if _, _, err := b.CommitConfig(ctx, storetest.NewStream("s", storetest.Cfg(9)), 3); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, ch); e.Config == nil || e.Config.Generation != 4 {
		t.Fatalf("event %+v, want generation 4", e)
	}
	_ = a.Close()
	for range ch {
	}
}

// TestWatchResyncReportsSinksDeletedInTheGap: a sink the reader listed and
// that another replica deleted during a compacted gap is reported deleted.
func TestWatchResyncReportsSinksDeletedInTheGap(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	a := newStore(t, srv.Client(t))
	b := newStore(t, cli)
	ctx := context.Background()
	for _, n := range []string{"gone", "kept"} {
		if err := b.PutSink(ctx, &confighubv1.Sink{Name: n, Kind: "file", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "/p"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if sinks, err := a.ListSinks(ctx); err != nil || len(sinks) != 2 {
		t.Fatalf("list: %v %v", sinks, err)
	}
	if err := b.DeleteSink(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	// A later change, so that the compaction swallows the deletion itself.
	if _, _, err := b.CommitConfig(ctx, storetest.NewStream("s", storetest.Cfg(1)), 0); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	ch := a.Watch(ctx)
	var puts, deletes []string
	for len(puts)+len(deletes) < 2 {
		e := recv(t, ch)
		if e.Config != nil {
			continue
		}
		if e.SinkPut != nil {
			puts = append(puts, e.SinkPut.GetName())
		}
		if e.SinkDeleted != "" {
			deletes = append(deletes, e.SinkDeleted)
		}
	}
	if len(puts) != 1 || puts[0] != "kept" || len(deletes) != 1 || deletes[0] != "gone" {
		t.Fatalf("after the gap: puts %v deletes %v, want put kept and delete gone", puts, deletes)
	}
	_ = a.Close()
	for range ch {
	}
}
