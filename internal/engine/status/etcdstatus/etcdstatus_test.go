package etcdstatus_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/engine/status/etcdstatus"
	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/statustest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

type all struct{}

func (all) OwnsSink(string) bool   { return true }
func (all) OwnsStream(string) bool { return true }
func (all) OwnerOf(string) string  { return "" }

// backend is a local broker, a Writer copying it to etcd and a Mirror
// reading it back.
type backend struct {
	*etcdstatus.Mirror
	src  *status.Broker
	w    *etcdstatus.Writer
	revs map[string]uint64
}

func (b *backend) touch(stream string, rev uint64) {
	b.w.Follow(stream)
	b.revs[stream] = max(b.revs[stream], rev)
}
func (b *backend) PutSink(st *confighubv1.SinkStatus) { b.touch(st.GetStream(), b.src.PutSink(st)) }
func (b *backend) RemoveSink(stream, sink string)     { b.touch(stream, b.src.RemoveSink(stream, sink)) }
func (b *backend) PutGeneration(stream string, g *confighubv1.GenerationStatus) {
	b.touch(stream, b.src.PutGeneration(stream, g))
}

func (b *backend) Sync(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for stream, rev := range b.revs {
		if err := b.w.WaitSeen(ctx, stream, rev); err != nil {
			t.Fatalf("writer did not take the changes of %q: %v", stream, err)
		}
	}
	rev, err := b.w.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Mirror.WaitRevision(ctx, rev); err != nil {
		t.Fatalf("mirror did not reach revision %d: %v", rev, err)
	}
}

func client(t *testing.T, srv *etcdtest.Server) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// run starts fn until the test ends.
func run(t *testing.T, fn func(ctx context.Context), then ...func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, f := range then {
			f()
		}
	})
}

func newBackend(t *testing.T, srv *etcdtest.Server, o statustest.Options) *backend {
	cli := client(t, srv)
	src := status.New()
	t.Cleanup(src.Close)
	w := etcdstatus.NewWriter(cli, "/t", src, all{}, nil, etcdstatus.WithInterval(time.Hour))
	m := etcdstatus.NewMirror(cli, "/t", etcdstatus.WithBrokerOptions(status.WithWatchBuffer(o.WatchBuffer), status.WithHistory(o.History)))
	run(t, m.Run, m.Close)
	run(t, w.Run)
	// Served once the keys were read (before, a watch gets a resume-gap
	// snapshot when the first read lands).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.WaitRevision(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return &backend{Mirror: m, src: src, w: w, revs: map[string]uint64{}}
}

func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	n := 0
	statustest.Run(t, func(t *testing.T, o statustest.Options) statustest.Backend {
		// A fresh prefix per subtest: an empty view.
		n++
		cli := client(t, srv)
		if _, err := cli.Delete(context.Background(), "/t", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		return newBackend(t, srv, o)
	})
}

// Two replicas' mirrors number the same changes the same way, so a watch
// resumes on either.
func TestMirrorsAgreeOnRevisions(t *testing.T) {
	srv := etcdtest.Start(t)
	b := newBackend(t, srv, statustest.Options{})
	other := etcdstatus.NewMirror(client(t, srv), "/t")
	run(t, other.Run, other.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both mirrors follow the watch before the changes: a mirror that
	// first lists etcd after them numbers them as one re-read.
	if err := other.WaitRevision(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Several sinks in one transaction: one etcd revision, several changes.
	for i := uint64(1); i <= 3; i++ {
		b.PutSink(statustest.SinkStatus("a", i))
		b.PutSink(statustest.SinkStatus("b", i))
		b.PutGeneration("s", &confighubv1.GenerationStatus{Generation: i})
		b.Sync(t)
	}
	snap, _ := b.Snapshot("s")
	if err := other.WaitRevision(ctx, int64(snap.GetRevision()>>20)); err != nil {
		t.Fatal(err)
	}
	osnap, _ := other.Snapshot("s")
	if osnap.GetRevision() != snap.GetRevision() || len(osnap.GetSinks()) != 2 {
		t.Fatalf("snapshots differ: %v vs %v", snap, osnap)
	}
	// Resume on the other replica from a revision of the first one's
	// watch, in the middle of a transaction's changes.
	ch := b.Watch(ctx, "s", 0)
	statustest.Recv(t, ch)
	b.PutSink(statustest.SinkStatus("a", 4))
	b.PutSink(statustest.SinkStatus("b", 4))
	b.Sync(t)
	first := statustest.Recv(t, ch)
	second := statustest.Recv(t, ch)
	if first.GetSink().GetSink() != "a" || second.GetSink().GetSink() != "b" || first.GetRevision() >= second.GetRevision() {
		t.Fatalf("one transaction's changes: %v then %v", first, second)
	}
	if err := other.WaitRevision(ctx, int64(second.GetRevision()>>20)); err != nil {
		t.Fatal(err)
	}
	ev := statustest.Recv(t, other.Watch(ctx, "s", first.GetRevision()))
	if ev.GetSnapshot() != nil || ev.GetRevision() != second.GetRevision() || ev.GetSink().GetSink() != "b" {
		t.Fatalf("resume on the other mirror from %d: %v, want %v", first.GetRevision(), ev, second)
	}
}

// After etcd restarts, the mirror reads the keys again: a watcher gets a
// resume-gap snapshot with what was written meanwhile.
func TestMirrorRecoversAfterEtcdRestart(t *testing.T) {
	srv := etcdtest.Start(t)
	b := newBackend(t, srv, statustest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.PutSink(statustest.SinkStatus("a", 1))
	b.Sync(t)
	ch := b.Watch(ctx, "s", 0)
	statustest.Recv(t, ch)
	srv.Stop()
	srv.Restart()
	// Written by another replica's writer while this mirror re-connects.
	cli := client(t, srv)
	src := status.New()
	defer src.Close()
	w := etcdstatus.NewWriter(cli, "/t", src, all{}, nil)
	w.Follow("s")
	run(t, w.Run)
	rev := src.PutSink(statustest.SinkStatus("b", 7))
	if err := w.WaitSeen(ctx, "s", rev); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		ev := statustest.Recv(t, ch)
		if ev.GetSink().GetSink() == "b" {
			break // the watch survived and saw the change
		}
		if snap := ev.GetSnapshot(); snap != nil {
			if ev.GetSnapshotReason() != status.ReasonResumeGap {
				t.Fatalf("snapshot reason %q, want resume-gap", ev.GetSnapshotReason())
			}
			if len(snap.GetSinks()) == 2 {
				break
			}
		}
	}
}

type lease struct {
	key string
	id  clientv3.LeaseID
}

func (l lease) Key() string             { return l.key }
func (l lease) Lease() clientv3.LeaseID { return l.id }

// A writer whose lease is gone writes nothing.
func TestWriterNeedsItsLease(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/t/members/r1", "", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	src := status.New()
	defer src.Close()
	w := etcdstatus.NewWriter(cli, "/t", src, all{}, lease{"/t/members/r1", g.ID}, etcdstatus.WithInterval(time.Hour))
	w.Follow("s")
	run(t, w.Run)
	put := func(applied uint64) int64 {
		t.Helper()
		if err := w.WaitSeen(ctx, "s", src.PutSink(statustest.SinkStatus("a", applied))); err != nil {
			t.Fatal(err)
		}
		rev, err := w.Flush(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	if put(1) == 0 {
		t.Fatal("the lease holder wrote nothing")
	}
	if _, err := cli.Revoke(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if rev := put(2); rev != 0 {
		t.Fatalf("written at revision %d after the lease was revoked", rev)
	}
}
