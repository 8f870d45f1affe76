package server_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // a watcher that compresses
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/harness"
	"github.com/confighub/confighub/internal/server"
)

// TestWatchersShareEncodings: the watchers of a stream receive the same
// changes, each marshalled once for all of them (one count per class of
// streams that encode alike); a watcher whose client compresses gets its
// own class and reads every change too.
func TestWatchersShareEncodings(t *testing.T) {
	addr, _, srv := startHubServer(t, nil)
	conn := harness.Dial(t, addr)
	hc := confighubv1.NewConfigHubServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const pushes = 3
	type watch struct {
		name string
		s    grpc.ServerStreamingClient[confighubv1.WatchStatusResponse]
	}
	var watches []watch
	for i := range 3 {
		s, err := hc.WatchStatus(ctx, &confighubv1.WatchStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, watch{fmt.Sprintf("plain %d", i), s})
	}
	gz, err := hc.WatchStatus(ctx, &confighubv1.WatchStatusRequest{}, grpc.UseCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	watches = append(watches, watch{"gzip", gz})
	for _, w := range watches {
		if ev, err := w.s.Recv(); err != nil || ev.GetSnapshot() == nil {
			t.Fatalf("%s: first event %v, %v; want the start snapshot", w.name, ev, err)
		}
	}
	for i := range pushes {
		cfg := fmt.Sprintf(`{"_format_version":"3.0","services":[{"name":"s%d","url":"http://x"}]}`, i)
		if _, err := hc.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(cfg)}); err != nil {
			t.Fatal(err)
		}
	}
	// Each watcher reads until sink "s" applied the last generation.
	seen := make([][]*confighubv1.WatchStatusResponse, len(watches))
	for i, w := range watches {
		for {
			ev, err := w.s.Recv()
			if err != nil {
				t.Fatalf("%s: %v after %d changes", w.name, err, len(seen[i]))
			}
			if ev.GetSnapshot() != nil {
				t.Fatalf("%s: snapshot %q mid-watch", w.name, ev.GetSnapshotReason())
			}
			seen[i] = append(seen[i], ev)
			if ev.GetSink().GetAppliedGeneration() == pushes {
				break
			}
		}
	}
	for i := 1; i < len(seen); i++ {
		if !slices.EqualFunc(seen[0], seen[i], func(a, b *confighubv1.WatchStatusResponse) bool { return proto.Equal(a, b) }) {
			t.Fatalf("%s saw other changes than %s:\n%v\n%v", watches[i].name, watches[0].name, seen[i], seen[0])
		}
	}
	cancel()
	// Every change read was marshalled once per class (plain, gzip), not
	// once per watcher.
	enc := server.WatchEncodes(srv)
	slices.Sort(enc)
	// (A class may have marshalled a few changes sent after the last one
	// read; unshared, the plain class would count 3 per change.)
	if len(enc) != 2 || enc[0] < len(seen[0]) || enc[1] >= 2*len(seen[0]) {
		t.Fatalf("marshals per class: %v for %d changes read by 3 plain and 1 gzip watcher; want 2 classes of about %d",
			enc, len(seen[0]), len(seen[0]))
	}
}
