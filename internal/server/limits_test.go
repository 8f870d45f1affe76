package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/test/harness"
)

// limitedServer is a server on a hub with limits l and options opts, and
// a client connection to it.
func limitedServer(t *testing.T, l hub.Limits, opts ...server.Option) (*grpc.ClientConn, *hub.Hub) {
	t.Helper()
	addr, h := startServerWith(t, []hub.Option{hub.WithLimits(l)}, opts...)
	return dial(t, addr), h
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func pushTo(c confighubv1.ConfigHubServiceClient, stream string, raw []byte) error {
	_, err := c.PushConfig(context.Background(), &confighubv1.PushConfigRequest{Stream: stream, Config: raw})
	return err
}

// streamNames lists the streams ListStreams shows.
func streamNames(t *testing.T, a confighubv1.SinkAdminServiceClient) []string {
	t.Helper()
	res, err := a.ListStreams(context.Background(), &confighubv1.ListStreamsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range res.GetStreams() {
		out = append(out, s.GetName())
	}
	return out
}

// --max-streams: a push or an upload that would create a stream past the
// bound is ResourceExhausted naming the flag and stores nothing; pushes
// to the streams that exist go on.
func TestMaxStreamsRefusedByName(t *testing.T) {
	conn, _ := limitedServer(t, hub.Limits{MaxStreams: 2})
	c := confighubv1.NewConfigHubServiceClient(conn)
	a := confighubv1.NewSinkAdminServiceClient(conn)
	for _, s := range []string{"a", "b"} {
		if err := pushTo(c, s, []byte(validConfig)); err != nil {
			t.Fatalf("push to %s: %v", s, err)
		}
	}
	const want = `stream "c" would be a new stream, and the hub holds 2 of at most 2 (--max-streams)`
	wantRefused(t, "push to a third stream", pushTo(c, "c", []byte(validConfig)), codes.ResourceExhausted, want)
	_, err := upload(t, c, []byte(validConfig), 0).CloseAndRecv()
	wantRefused(t, "upload to a third stream", err, codes.ResourceExhausted, `stream "default" would be a new stream`)
	_, err = c.GetConfig(context.Background(), &confighubv1.GetConfigRequest{Stream: "c"})
	wantRefused(t, "the refused stream", err, codes.NotFound, `"c"`)
	if got := fmt.Sprint(streamNames(t, a)); got != "[a b default]" { // default: the sink's stream
		t.Errorf("streams after the refusals: %s", got)
	}
	if err := pushTo(c, "a", configOf(100)); err != nil {
		t.Errorf("a push to a stream that exists: %v", err)
	}
}

// --max-sinks: a PutSink of a new name past the bound is
// ResourceExhausted naming the flag and changes nothing; replacing a
// sink still works.
func TestMaxSinksRefusedByName(t *testing.T) {
	conn, _ := limitedServer(t, hub.Limits{MaxSinks: 2}) // "s" is seeded
	a := confighubv1.NewSinkAdminServiceClient(conn)
	ctx := context.Background()
	put := func(name, stream string) error {
		_, err := a.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: &confighubv1.Sink{Name: name, Kind: "nop", Stream: stream}})
		return err
	}
	if err := put("t", ""); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "a third sink", put("u", ""), codes.ResourceExhausted, `sink "u" would be a new sink, and the hub has 2 of at most 2 (--max-sinks)`)
	if err := put("t", "other"); err != nil {
		t.Errorf("replacing a sink at the bound: %v", err)
	}
	res, err := a.ListSinks(ctx, &confighubv1.ListSinksRequest{})
	if err != nil || len(res.GetSinks()) != 2 {
		t.Errorf("sinks after the refusal: %v, %v", res.GetSinks(), err)
	}
}

// openWatch opens a WatchStatus of the default stream and reads its
// first event; the watch ends with the test.
func openWatch(t *testing.T, c confighubv1.ConfigHubServiceClient) (context.CancelFunc, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := c.WatchStatus(ctx, &confighubv1.WatchStatusRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	return cancel, err
}

// --max-watchers: a watch past the hub-wide bound is ResourceExhausted
// naming the flag, whichever connection it comes on; once a watch ends
// its place is free.
func TestMaxWatchersRefusedByName(t *testing.T) {
	conn, h := limitedServer(t, hub.Limits{MaxWatchers: 2})
	c := confighubv1.NewConfigHubServiceClient(conn)
	first, err := openWatch(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openWatch(t, c); err != nil {
		t.Fatal(err)
	}
	other := confighubv1.NewConfigHubServiceClient(dial(t, conn.Target()))
	_, err = openWatch(t, other)
	wantRefused(t, "a third watcher", err, codes.ResourceExhausted, "the hub has 2 status watchers open, at most 2 (--max-watchers)")
	first()
	harness.Eventually(t, 10*time.Second, func() bool { return usage(h, hub.FlagMaxWatchers) == 1 }, "the ended watch still counts")
	if _, err := openWatch(t, other); err != nil {
		t.Errorf("a watch once another ended: %v", err)
	}
}

func usage(h *hub.Hub, flag string) int64 {
	for _, u := range h.Usage() {
		if u.Flag == flag {
			return u.Used
		}
	}
	return -1
}

// --max-concurrent-streams: a call past the bound on one connection is
// ResourceExhausted naming the flag at once (it does not wait in the
// client for a free HTTP/2 stream); another connection is not affected.
func TestMaxConcurrentStreamsRefusedByName(t *testing.T) {
	conn, _ := limitedServer(t, hub.Limits{}, server.WithMaxConcurrentStreams(3))
	c := confighubv1.NewConfigHubServiceClient(conn)
	for range 3 {
		if _, err := openWatch(t, c); err != nil {
			t.Fatal(err)
		}
	}
	const want = "this connection has the 3 calls open that it may have at once (--max-concurrent-streams)"
	_, err := openWatch(t, c)
	wantRefused(t, "a fourth watch on the connection", err, codes.ResourceExhausted, want)
	_, err = c.GetStatus(context.Background(), &confighubv1.GetStatusRequest{})
	wantRefused(t, "a unary call on the full connection", err, codes.ResourceExhausted, want)
	other := confighubv1.NewConfigHubServiceClient(dial(t, conn.Target()))
	if _, err := openWatch(t, other); err != nil {
		t.Errorf("a watch on another connection: %v", err)
	}
}

// --max-held-config-bytes: a push whose bytes would take the streams'
// configurations past the bound is ResourceExhausted naming the flag and
// stores nothing; a stream's own bytes are replaced, not added.
func TestMaxHeldConfigBytesRefusedByName(t *testing.T) {
	conn, _ := limitedServer(t, hub.Limits{MaxHeldConfigBytes: 1000})
	c := confighubv1.NewConfigHubServiceClient(conn)
	if err := pushTo(c, "a", configOf(600)); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "600 more bytes", pushTo(c, "b", configOf(600)), codes.ResourceExhausted,
		`a configuration of 600 bytes for stream "b" would make the streams' configurations hold 1200 bytes, at most 1000 (--max-held-config-bytes)`)
	_, err := upload(t, c, configOf(600), 0).CloseAndRecv()
	wantRefused(t, "an upload of 600 more bytes", err, codes.ResourceExhausted, "(--max-held-config-bytes)")
	if err := pushTo(c, "b", configOf(300)); err != nil {
		t.Fatalf("300 more bytes: %v", err)
	}
	if err := pushTo(c, "a", configOf(700)); err != nil {
		t.Errorf("a's 600 bytes replaced by 700: %v", err)
	}
	got, err := c.GetConfig(context.Background(), &confighubv1.GetConfigRequest{Stream: "b"})
	if err != nil || got.GetGeneration() != 1 || len(got.GetConfig()) != 300 {
		t.Errorf("stream b: generation %d, %d bytes, %v; want the 300 bytes of generation 1", got.GetGeneration(), len(got.GetConfig()), err)
	}
}

// DeleteStream: FailedPrecondition naming the sinks while sinks read the
// stream, then the stream goes (its configuration, its place under
// --max-streams) once they are gone; NotFound for a stream with no
// configuration. ListStreams shows what is there.
func TestDeleteStream(t *testing.T) {
	conn, _ := limitedServer(t, hub.Limits{MaxStreams: 2})
	c := confighubv1.NewConfigHubServiceClient(conn)
	a := confighubv1.NewSinkAdminServiceClient(conn)
	ctx := context.Background()
	for _, s := range []string{"keep", "typo"} {
		if err := pushTo(c, s, []byte(validConfig)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: &confighubv1.Sink{Name: "gw", Kind: "nop", Stream: "typo"}}); err != nil {
		t.Fatal(err)
	}
	_, err := a.DeleteStream(ctx, &confighubv1.DeleteStreamRequest{Name: "typo"})
	wantRefused(t, "a stream a sink reads", err, codes.FailedPrecondition, `stream "typo" is read by 1 sink(s): gw`)
	res, err := a.ListStreams(ctx, &confighubv1.ListStreamsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var typo *confighubv1.StreamInfo
	for _, s := range res.GetStreams() {
		if s.GetName() == "typo" {
			typo = s
		}
	}
	if typo.GetGeneration() != 1 || typo.GetSinks() != 1 || typo.GetConfigBytes() != uint64(len(validConfig)) || typo.GetHash() == "" {
		t.Errorf("ListStreams shows typo as %v", typo)
	}
	wantRefused(t, "a third stream", pushTo(c, "third", []byte(validConfig)), codes.ResourceExhausted, "(--max-streams)")

	if _, err := a.DeleteSink(ctx, &confighubv1.DeleteSinkRequest{Name: "gw"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteStream(ctx, &confighubv1.DeleteStreamRequest{Name: "typo"}); err != nil {
		t.Fatalf("DeleteStream once no sink reads it: %v", err)
	}
	_, err = c.GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: "typo"})
	wantRefused(t, "the deleted stream's configuration", err, codes.NotFound, `"typo"`)
	_, err = a.DeleteStream(ctx, &confighubv1.DeleteStreamRequest{Name: "typo"})
	wantRefused(t, "deleting it again", err, codes.NotFound, `stream "typo" has no configuration`)
	if got := fmt.Sprint(streamNames(t, a)); got != "[default keep]" {
		t.Errorf("streams after the deletion: %s", got)
	}
	if err := pushTo(c, "third", []byte(validConfig)); err != nil {
		t.Errorf("a new stream once the deleted one freed its place: %v", err)
	}
}
