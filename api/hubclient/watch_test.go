package hubclient

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// TestWatchStateReportsBreaksAndReconnects: WithWatchState's function gets
// each retried break's error and then nil once the hub answers again (its
// header), before the event that follows, and not for a stream refused at
// once; a watch that never breaks reports nothing, and an error that ends
// Watch is returned, not reported.
func TestWatchStateReportsBreaksAndReconnects(t *testing.T) {
	c, _ := startFake(t,
		script{events: []*confighubv1.WatchStatusResponse{snapshot(1)}, err: status.Error(codes.Unavailable, "hub going away")},
		script{err: status.Error(codes.Unavailable, "still away")},
		script{events: []*confighubv1.WatchStatusResponse{sinkEv(2, sinkAt("a", 1))}},
	)
	var got []string
	WithWatchState(func(err error) {
		if err == nil {
			got = append(got, "reconnected")
			return
		}
		got = append(got, "broken: "+status.Convert(err).Message())
	})(c)
	errDone := errors.New("done")
	err := c.Watch(waitCtx(t), "default", 0, func(ev *confighubv1.WatchStatusResponse) error {
		got = append(got, fmt.Sprintf("event %d", ev.GetRevision()))
		if ev.GetRevision() == 2 {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("Watch: %v", err)
	}
	want := []string{"event 1", "broken: hub going away", "broken: still away", "reconnected", "event 2"}
	if len(got) != len(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	}

	quiet, _ := startFake(t, script{events: []*confighubv1.WatchStatusResponse{snapshot(1)}}, script{err: status.Error(codes.NotFound, "no stream")})
	calls := 0
	WithWatchState(func(error) { calls++ })(quiet)
	if err := quiet.Watch(waitCtx(t), "default", 0, func(*confighubv1.WatchStatusResponse) error { return errDone }); !errors.Is(err, errDone) || calls != 0 {
		t.Fatalf("a watch without breaks: err %v, %d reports", err, calls)
	}
	if err := quiet.Watch(waitCtx(t), "nope", 0, func(*confighubv1.WatchStatusResponse) error { return nil }); status.Code(err) != codes.NotFound || calls != 0 {
		t.Fatalf("a permanent error: err %v, %d reports", err, calls)
	}
}
