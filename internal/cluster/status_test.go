package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/confighub/confighub/internal/store/etcd/etcdtest"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"google.golang.org/protobuf/proto"
)

// TestResumeGapSnapshotWithFullBuffer: a watcher whose buffer is full when
// it must be sent a snapshot (its revision was compacted, or its etcd
// watch broke) is not waited for: the snapshot replaces what it had not
// read, and the watcher still ends when its context does (before, the
// send blocked, so the watcher's goroutine, and the Fanout's Run that
// waits for it, hung once the reader had gone).
func TestResumeGapSnapshotWithFullBuffer(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	f := New(nil, newSharedStore(), nil, cli, nil, "/t")
	defer f.baseCancel()
	ctx := context.Background()
	b, _ := proto.Marshal(&confighubv1.SinkStatus{Sink: "s", Stream: "default"})
	var rev int64
	for range 3 {
		r, err := cli.Put(ctx, f.statusKey("s"), string(b))
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	if _, err := cli.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	out := make(chan *confighubv1.WatchStatusResponse, 2)
	out <- &confighubv1.WatchStatusResponse{Revision: 1}
	out <- &confighubv1.WatchStatusResponse{Revision: 2}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&statusWatch{f: f, stream: "default", out: out}).run(wctx, 1) // revision 1 is compacted
	}()
	for i := 0; len(out) != 1 && i < 1000; i++ { // bounded wait for the snapshot
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		<-out // let the blocked send through so the goroutine can end
		<-done
		t.Fatal("the watcher blocked on its full buffer and did not end with its context")
	}
	m := <-out
	if m.GetSnapshot() == nil || m.GetSnapshotReason() != ReasonResumeGap || m.GetRevision() != uint64(rev) {
		t.Fatalf("want only a resume-gap snapshot at %d in the buffer, got %v", rev, m)
	}
}
