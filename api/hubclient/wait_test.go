package hubclient

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// fakeHub is an in-process ConfigHubService whose WatchStatus plays one
// script per call: its events, then its error (nil: stay open until the
// client goes away). It records each call's from_revision.
type fakeHub struct {
	confighubv1.UnimplementedConfigHubServiceServer
	scripts chan script
	froms   chan uint64
}

type script struct {
	events []*confighubv1.WatchStatusResponse
	err    error
}

func (f *fakeHub) WatchStatus(req *confighubv1.WatchStatusRequest, st grpc.ServerStreamingServer[confighubv1.WatchStatusResponse]) error {
	f.froms <- req.GetFromRevision()
	var sc script
	select {
	case sc = <-f.scripts:
	case <-st.Context().Done():
		return st.Context().Err()
	}
	for _, ev := range sc.events {
		if err := st.Send(ev); err != nil {
			return err
		}
	}
	if sc.err != nil {
		return sc.err
	}
	<-st.Context().Done()
	return nil
}

// startFake serves a fakeHub on an in-memory listener and returns a client
// of it with a short reconnect backoff.
func startFake(t *testing.T, scripts ...script) (*Client, *fakeHub) {
	t.Helper()
	f := &fakeHub{scripts: make(chan script, len(scripts)), froms: make(chan uint64, 16)}
	for _, s := range scripts {
		f.scripts <- s
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	confighubv1.RegisterConfigHubServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	cc, err := grpc.NewClient("passthrough:///fake",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close(); srv.Stop() })
	return New(cc, WithWatchBackoff(time.Millisecond, time.Millisecond)), f
}

func snapshot(rev uint64, sinks ...*confighubv1.SinkStatus) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, SnapshotReason: "start", Event: &confighubv1.WatchStatusResponse_Snapshot{
		Snapshot: &confighubv1.GetStatusResponse{Revision: rev, Stream: "default", Sinks: sinks}}}
}

func sinkEv(rev uint64, st *confighubv1.SinkStatus) *confighubv1.WatchStatusResponse {
	return &confighubv1.WatchStatusResponse{Revision: rev, Event: &confighubv1.WatchStatusResponse_Sink{Sink: st}}
}

func sinkAt(name string, applied uint64) *confighubv1.SinkStatus {
	st := &confighubv1.SinkStatus{Sink: name, Stream: "default", AppliedGeneration: applied, State: confighubv1.SinkState_SINK_STATE_APPLYING}
	if applied > 0 {
		st.State = confighubv1.SinkState_SINK_STATE_APPLIED
	}
	return st
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sinkNames(sts []*confighubv1.SinkStatus) []string {
	var out []string
	for _, st := range sts {
		out = append(out, st.GetSink())
	}
	return out
}

// TestWaitReturnsWhenEverySinkApplied: Wait folds the snapshot and the
// sink events; a sink that applied a later generation (the slot coalesced
// the one waited for) counts as applied; a sink removed meanwhile is no
// longer waited for; the result has every sink's final status.
func TestWaitReturnsWhenEverySinkApplied(t *testing.T) {
	c, _ := startFake(t, script{events: []*confighubv1.WatchStatusResponse{
		snapshot(10, sinkAt("a", 1), sinkAt("b", 1), sinkAt("gone", 1)),
		sinkEv(11, sinkAt("a", 2)),
		{Revision: 12, Event: &confighubv1.WatchStatusResponse_SinkRemoved{SinkRemoved: "gone"}},
		sinkEv(13, sinkAt("b", 3)),
		sinkEv(14, sinkAt("a", 4)), // after the wait is over: not in the result
	}})
	res, err := c.Wait(waitCtx(t), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 13 || res.Generation != 2 || res.Stream != "default" {
		t.Fatalf("result at revision %d generation %d stream %q, want 13, 2, default", res.Revision, res.Generation, res.Stream)
	}
	if got := sinkNames(res.Sinks); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("sinks %v, want [a b]", got)
	}
	if res.Sinks[0].GetAppliedGeneration() != 2 || res.Sinks[1].GetAppliedGeneration() != 3 {
		t.Fatalf("applied generations %d %d, want 2 3", res.Sinks[0].GetAppliedGeneration(), res.Sinks[1].GetAppliedGeneration())
	}
}

// TestWaitReturnsRejectionWithEntityErrors: one rejecting sink ends the
// wait with a *RejectedError that carries its entity errors and their
// tags, while the other sink is still applying.
func TestWaitReturnsRejectionWithEntityErrors(t *testing.T) {
	failed := &confighubv1.SinkStatus{
		Sink: "gw-1", Stream: "default", State: confighubv1.SinkState_SINK_STATE_FAILED,
		AppliedGeneration: 1, RejectedGeneration: 2, LastErrorCode: "rejected", LastError: "rejected: declarative config is invalid",
		EntityErrors: []*confighubv1.EntityError{{
			EntityType: "route", EntityName: "default.echo.echo.example.com.80",
			EntityTags: []string{"k8s-name:echo", "k8s-namespace:default", "k8s-kind:Ingress"},
			Errors:     []*confighubv1.FieldError{{Type: "field", Field: "paths.1", Message: "should start with: / (fixed path) or ~/ (regex path)"}},
		}},
	}
	c, _ := startFake(t, script{events: []*confighubv1.WatchStatusResponse{
		snapshot(5, sinkAt("gw-1", 1), sinkAt("gw-2", 1)),
		sinkEv(6, failed),
	}})
	_, err := c.Wait(waitCtx(t), "", 2)
	var rej *RejectedError
	if !errors.As(err, &rej) || !errors.Is(err, ErrRejected) {
		t.Fatalf("Wait: %v, want a *RejectedError wrapping ErrRejected", err)
	}
	if got := sinkNames(rej.Rejected); len(got) != 1 || got[0] != "gw-1" {
		t.Fatalf("rejected by %v, want [gw-1]", got)
	}
	if got := sinkNames(rej.Result.Sinks); len(got) != 2 {
		t.Fatalf("result sinks %v, want both", got)
	}
	ees := rej.EntityErrors()
	if len(ees) != 1 || ees[0].Sink != "gw-1" || ees[0].GetErrors()[0].GetField() != "paths.1" {
		t.Fatalf("entity errors %v", ees)
	}
	kind, _ := Tag(ees[0].GetEntityTags(), "k8s-kind")
	ns, _ := Tag(ees[0].GetEntityTags(), "k8s-namespace")
	name, _ := Tag(ees[0].GetEntityTags(), "k8s-name")
	if kind+"/"+ns+"/"+name != "Ingress/default/echo" {
		t.Fatalf("tags map to %s/%s/%s, want Ingress/default/echo", kind, ns, name)
	}
	if _, ok := Tag(ees[0].GetEntityTags(), "k8s"); ok {
		t.Fatal("Tag matched a key's prefix")
	}
}

// TestWaitResumesAfterDisconnect: the watch breaks after the first sink
// applied; Wait reconnects from the last revision it saw and finishes on
// the replayed changes, without a second snapshot.
func TestWaitResumesAfterDisconnect(t *testing.T) {
	c, f := startFake(t,
		script{events: []*confighubv1.WatchStatusResponse{snapshot(20, sinkAt("a", 1), sinkAt("b", 1)), sinkEv(21, sinkAt("a", 2))},
			err: status.Error(codes.Unavailable, "hub restarting")},
		script{events: []*confighubv1.WatchStatusResponse{sinkEv(22, sinkAt("b", 2))}},
	)
	res, err := c.Wait(waitCtx(t), "", 2)
	if err != nil || res.Revision != 22 {
		t.Fatalf("Wait: %v %v, want the result at revision 22", res, err)
	}
	if first, second := <-f.froms, <-f.froms; first != 0 || second != 21 {
		t.Fatalf("watch from revisions %d then %d, want 0 then 21", first, second)
	}
}

func TestWaitNoSinks(t *testing.T) {
	c, _ := startFake(t, script{events: []*confighubv1.WatchStatusResponse{snapshot(1)}})
	if _, err := c.Wait(waitCtx(t), "", 1); !errors.Is(err, ErrNoSinks) {
		t.Fatalf("Wait on a stream without sinks: %v, want ErrNoSinks", err)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	c, f := startFake(t, script{events: []*confighubv1.WatchStatusResponse{snapshot(1, sinkAt("a", 1))}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Wait(ctx, "", 2); done <- err }()
	<-f.froms // the watch is open
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
}

// TestWaitTimeoutSaysWhoIsPending: when ctx ends, Wait returns ctx's
// error with what each sink had done, so a controller can name the sinks
// still applying.
func TestWaitTimeoutSaysWhoIsPending(t *testing.T) {
	c, f := startFake(t,
		script{events: []*confighubv1.WatchStatusResponse{snapshot(1, sinkAt("a", 1), sinkAt("b", 1)), sinkEv(2, sinkAt("a", 2))},
			err: status.Error(codes.Unavailable, "restarting")},
		script{}, // the resumed watch stays open
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-f.froms
		<-f.froms // resuming from revision 2: Wait folded both events
		cancel()
	}()
	res, err := c.Wait(ctx, "", 2)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Wait: %v %v, want context.Canceled with the sinks' statuses", res, err)
	}
	if res.Revision != 2 || res.Sinks[0].GetAppliedGeneration() != 2 || res.Sinks[1].GetAppliedGeneration() != 1 {
		t.Fatalf("partial result %v, want a applied and b pending at revision 2", res)
	}
}

// TestWaitReturnsPermanentWatchErrors: an unknown stream is not retried.
func TestWaitReturnsPermanentWatchErrors(t *testing.T) {
	c, _ := startFake(t, script{err: status.Error(codes.NotFound, "stream not found")})
	if _, err := c.Wait(waitCtx(t), "typo", 1); status.Code(err) != codes.NotFound {
		t.Fatalf("Wait: %v, want NotFound", err)
	}
}
