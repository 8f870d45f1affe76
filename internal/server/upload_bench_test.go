package server_test

import (
	"context"
	"fmt"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/bench/rawack"
)

// BenchmarkUploadConfig is the UploadConfig round trip in one process
// (hubclient's upload in 1 MiB chunks, hub on the bolt store, over
// loopback), against rawack's raw streamed baseline (each chunk pwritten
// as it arrives, one fdatasync after the last). Reported besides ns/op:
// cpu-ms/op, the process's CPU time per upload (client and server
// together). The expected hash is computed before the clock runs and
// given as Push.Hash, as confighub-bench scenario 1 does.
//
//	go test -run '^$' -bench BenchmarkUploadConfig -benchtime 5x ./internal/server
func BenchmarkUploadConfig(b *testing.B) {
	for _, size := range []int{20 << 20, 200 << 20} {
		raw := benchConfig(size)
		b.Run(fmt.Sprintf("%dMiB/hub", size>>20), func(b *testing.B) {
			c := benchHub(b, 1)[0]
			runUploads(b, raw, func(ctx context.Context, cfg []byte, sum string) error {
				_, err := c.Push(ctx, hubclient.Push{Config: cfg, Format: confighubv1.Format_FORMAT_JSON, Hash: sum})
				return err
			})
		})
		b.Run(fmt.Sprintf("%dMiB/raw", size>>20), func(b *testing.B) {
			conn := benchRaw(b, size+4096)
			runUploads(b, raw, func(ctx context.Context, cfg []byte, _ string) error {
				return rawack.Upload(ctx, conn, cfg, hubclient.DefaultChunkBytes)
			})
		})
	}
}

// runUploads makes b.N uploads of distinct configs (raw stamped with the
// upload's number) one at a time, and reports cpu-ms/op.
func runUploads(b *testing.B, raw []byte, upload func(ctx context.Context, cfg []byte, sum string) error) {
	ctx := context.Background()
	cfg := benchStamp(raw, 1e9)
	if err := upload(ctx, cfg, config.Hash(cfg)); err != nil { // warm up
		b.Fatal(err)
	}
	b.ResetTimer()
	var cpu0, cpu int64
	for i := range b.N {
		b.StopTimer()
		stampInto(cfg, int64(i))
		sum := config.Hash(cfg)
		cpu0 = int64(cpuTime(b))
		b.StartTimer()
		if err := upload(ctx, cfg, sum); err != nil {
			b.Fatal(err)
		}
		cpu += int64(cpuTime(b)) - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}
