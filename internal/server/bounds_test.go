package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/test/harness"
)

const validConfig = `{"_format_version":"3.0","services":[]}`

func dialServer(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(startServer(t), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// wantRefused fails unless err is code with a message that says want and
// is short (an error never echoes a large input).
func wantRefused(t *testing.T, what string, err error, code codes.Code, want string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), want) {
		t.Errorf("%s: %s %.300q, want %s saying %q", what, st.Code(), st.Message(), code, want)
	}
	if n := len(st.Message()); n > 1024 {
		t.Errorf("%s: the error message is %d bytes", what, n)
	}
}

func labelsOf(n, keyLen, valLen int) map[string]string {
	m := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("%0*d", keyLen, i)
		m[k] = strings.Repeat("v", valLen)
	}
	return m
}

// Labels are bounded (64, key 128 bytes, value 1 KiB, 16 KiB in all) on
// both push paths, and a refusal names the label without echoing it.
func TestLabelBounds(t *testing.T) {
	conn := dialServer(t)
	c := confighubv1.NewConfigHubServiceClient(conn)
	ctx := context.Background()
	big := labelsOf(1, 8, 60<<20/2) // a 30 MiB value
	cases := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"65 labels", labelsOf(65, 4, 1), "at most 64 labels (got 65)"},
		{"empty key", map[string]string{"": "x"}, "a label key is empty"},
		{"long key", map[string]string{strings.Repeat("k", 100<<10): "x"}, `label key "` + strings.Repeat("k", 64) + `..." is longer than 128 bytes`},
		{"long value", map[string]string{"pod": "p", "commit": strings.Repeat("c", 1025)}, `label "commit": the value is 1025 bytes, at most 1024`},
		{"huge value", big, "the value is 31457280 bytes, at most 1024"},
		{"large in all", labelsOf(20, 24, 1000), "labels are 20480 bytes in all (keys and values), at most 16384"},
		// The fewest labels within the per-label bounds that exceed the total.
		{"15 at the bounds", labelsOf(15, 128, 1024), "labels are 17280 bytes in all (keys and values), at most 16384"},
	}
	for _, tc := range cases {
		_, err := c.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(validConfig), Labels: tc.labels})
		wantRefused(t, "push: "+tc.name, err, codes.InvalidArgument, tc.want)
		up, err := c.UploadConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{
			TotalSize: uint64(len(validConfig)), ExpectedHash: config.Hash([]byte(validConfig)), Labels: tc.labels}}})
		_, err = up.CloseAndRecv()
		wantRefused(t, "upload: "+tc.name, err, codes.InvalidArgument, tc.want)
	}
	// At the bounds: accepted, and read back (distinct configs: an
	// unchanged one keeps the labels it had).
	for i, ok := range []map[string]string{
		labelsOf(64, 128, 127),  // 64 x 255 = 16320 bytes
		labelsOf(14, 128, 1024), // 14 x 1152 = 16128 bytes
	} {
		raw := fmt.Sprintf(`{"_format_version":"3.0","services":[],"_comment":"%d"}`, i)
		if _, err := c.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(raw), Labels: ok}); err != nil {
			t.Fatalf("%d labels at the bounds: %v", len(ok), err)
		}
		got, err := c.GetConfig(ctx, &confighubv1.GetConfigRequest{})
		if err != nil || len(got.GetLabels()) != len(ok) {
			t.Fatalf("GetConfig: %d labels, %v; want %d", len(got.GetLabels()), err, len(ok))
		}
	}
}

// Every RPC that names a stream or a sink validates the name as a push
// does: a 100 KB name is InvalidArgument with a short message (it was a
// NotFound echoing the 100 KB).
func TestReadRPCsValidateNames(t *testing.T) {
	conn := dialServer(t)
	c := confighubv1.NewConfigHubServiceClient(conn)
	a := confighubv1.NewSinkAdminServiceClient(conn)
	ctx := context.Background()
	long := strings.Repeat("s", 100<<10)
	_, err := c.GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: long})
	wantRefused(t, "GetStatus", err, codes.InvalidArgument, "a stream name is at most 63 characters (got 102400)")
	_, err = c.GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: long})
	wantRefused(t, "GetConfig", err, codes.InvalidArgument, "a stream name is at most 63 characters")
	_, err = c.GetConfig(ctx, &confighubv1.GetConfigRequest{Sink: long})
	wantRefused(t, "GetConfig of a sink", err, codes.InvalidArgument, "a sink name is at most 128 characters")
	_, err = c.GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: "Bad/Name"})
	wantRefused(t, "GetStatus", err, codes.InvalidArgument, "a stream name is made of a-z")
	w, err := c.WatchStatus(ctx, &confighubv1.WatchStatusRequest{Stream: long})
	if err == nil {
		_, err = w.Recv()
	}
	wantRefused(t, "WatchStatus", err, codes.InvalidArgument, "a stream name is at most 63 characters")
	_, err = a.ListSinks(ctx, &confighubv1.ListSinksRequest{Stream: long})
	wantRefused(t, "ListSinks", err, codes.InvalidArgument, "a stream name is at most 63 characters")
	_, err = a.DeleteSink(ctx, &confighubv1.DeleteSinkRequest{Name: long})
	wantRefused(t, "DeleteSink", err, codes.InvalidArgument, "a sink name is at most 128 characters")
	// Valid names still work: the default stream, an unknown one.
	if _, err := c.GetStatus(ctx, &confighubv1.GetStatusRequest{}); err != nil {
		t.Errorf("GetStatus of the default stream: %v", err)
	}
	_, err = c.GetStatus(ctx, &confighubv1.GetStatusRequest{Stream: "nope"})
	wantRefused(t, "GetStatus of an unknown stream", err, codes.NotFound, `"nope"`)
	if _, err := a.ListSinks(ctx, &confighubv1.ListSinksRequest{}); err != nil {
		t.Errorf("ListSinks: %v", err)
	}
}

// configOf returns a valid configuration of exactly n bytes.
func configOf(n int) []byte {
	const head, tail = `{"_format_version":"3.0","x":"`, `"}`
	return []byte(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
}

// upload sends an UploadConfig header for raw, then the chunks from
// raw[:sent], and returns the open stream.
func upload(t *testing.T, c confighubv1.ConfigHubServiceClient, raw []byte, sent int) grpc.ClientStreamingClient[confighubv1.UploadConfigRequest, confighubv1.UploadConfigResponse] {
	t.Helper()
	up, err := c.UploadConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{
		TotalSize: uint64(len(raw)), ExpectedHash: config.Hash(raw)}}}); err != nil {
		t.Fatal(err)
	}
	if sent > 0 {
		if err := up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: raw[:sent]}}); err != nil {
			t.Fatal(err)
		}
	}
	return up
}

// The uploads in flight share one budget (--upload-budget-bytes): an
// upload whose announced size does not fit is ResourceExhausted, saying
// so, from its header alone (before any of its bytes); the budget comes
// back when an upload ends.
func TestUploadBudget(t *testing.T) {
	addr, h := startServerWith(t, []hub.Option{hub.WithUploadBudgetBytes(100_000)})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := confighubv1.NewConfigHubServiceClient(conn)

	// Larger than the budget on its own (but within --max-config-bytes).
	_, err = upload(t, c, configOf(100_001), 0).CloseAndRecv()
	wantRefused(t, "upload over the budget", err, codes.ResourceExhausted,
		"an upload of 100001 bytes does not fit the hub's budget of 100000 bytes for uploads in flight (--upload-budget-bytes): 0 bytes are held by 0 upload(s)")

	// A holds 60,000 bytes of the budget while its bytes trickle in.
	a := configOf(60_000)
	upA := upload(t, c, a, 1000)
	harness.Eventually(t, 10*time.Second, func() bool {
		held, n := h.UploadsInFlight()
		return held == 60_000 && n == 1
	}, "upload A's header never took its share of the budget")
	b := configOf(50_000)
	_, err = upload(t, c, b, 0).CloseAndRecv()
	wantRefused(t, "upload while another holds the budget", err, codes.ResourceExhausted,
		"an upload of 50000 bytes does not fit the hub's budget of 100000 bytes for uploads in flight (--upload-budget-bytes): 60000 bytes are held by 1 upload(s)")

	// A finishes and is acked; its share comes back, so B fits now.
	if err := upA.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: a[1000:]}}); err != nil {
		t.Fatal(err)
	}
	if res, err := upA.CloseAndRecv(); err != nil || res.GetGeneration() != 1 {
		t.Fatalf("upload A: %v, %v", res, err)
	}
	upB := upload(t, c, b, len(b))
	if res, err := upB.CloseAndRecv(); err != nil || res.GetGeneration() != 2 {
		t.Fatalf("upload B after A: %v, %v", res, err)
	}
	// A refused or abandoned upload gives its share back too.
	upC := upload(t, c, configOf(90_000), 10)
	_ = upC.CloseSend()
	if _, err := upC.CloseAndRecv(); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("truncated upload: %v", err)
	}
	if _, err := upload(t, c, configOf(90_000), 90_000).CloseAndRecv(); err != nil {
		t.Fatalf("upload after a truncated one: %v", err)
	}
	// The handler gives the share back as it returns, just after the
	// answer left.
	harness.Eventually(t, 10*time.Second, func() bool {
		held, n := h.UploadsInFlight()
		return held == 0 && n == 0
	}, "the budget was not given back after every upload ended")
}
