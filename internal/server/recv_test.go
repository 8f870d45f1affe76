package server_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

// letterConfig is a valid configuration of exactly n bytes filled with
// letter.
func letterConfig(n int, letter string) []byte {
	const head, tail = `{"_format_version":"3.0","x":"`, `"}`
	return []byte(head + strings.Repeat(letter, n-len(head)-len(tail)) + tail)
}

// Pushes and uploads of sizes that reuse each other's receive buffers,
// larger then smaller, each store exactly the bytes sent, never a byte of
// an earlier message (upload chunks stay in those buffers: uploadMsg).
func TestReceivedBytesAreExact(t *testing.T) {
	conn := harness.Dial(t, startServer(t), grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	c := confighubv1.NewConfigHubServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	check := func(what string, want []byte) {
		t.Helper()
		got, err := c.GetConfig(ctx, &confighubv1.GetConfigRequest{})
		if err != nil {
			t.Fatalf("%s: GetConfig: %v", what, err)
		}
		if !bytes.Equal(got.GetConfig(), want) {
			t.Fatalf("%s: stored %d bytes that differ from the %d sent", what, len(got.GetConfig()), len(want))
		}
	}
	for i, n := range []int{3 << 20, 1<<20 + 7, 20 << 10, 3<<20 - 5, 1000, 1 << 20} {
		raw := letterConfig(n, string(rune('b'+i)))
		if _, err := c.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: raw}); err != nil {
			t.Fatalf("push %d of %d bytes: %v", i, n, err)
		}
		check("push of "+config.Hash(raw)[:8], raw)
	}
	for i, n := range []int{5<<20 + 11, 2 << 20} {
		raw := letterConfig(n, string(rune('m'+i)))
		up, err := c.UploadConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{
			TotalSize: uint64(len(raw)), ExpectedHash: config.Hash(raw)}}}); err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(raw); off += 1 << 20 {
			if err := up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: raw[off:min(off+1<<20, len(raw))]}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := up.CloseAndRecv(); err != nil {
			t.Fatalf("upload of %d bytes: %v", n, err)
		}
		check("upload", raw)
	}
}
