package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/bolt"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/bench/rawack"
	"github.com/confighub/confighub/test/harness"
)

// benchConfig returns a KIC-shaped JSON config of about n bytes whose last
// digits benchStamp makes distinct per push.
func benchConfig(n int) []byte {
	entry := []byte(`{"name":"svc-000000","host":"upstream.example.svc","port":8080,"path":"/path","tags":["k8s-name:x","k8s-namespace:y"]},`)
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for b.Len() < n-64 {
		b.Write(entry)
	}
	b.WriteString(`{"name":"last-0000000000"}]}`)
	return b.Bytes()
}

// benchStamp returns a copy of raw made distinct by i.
func benchStamp(raw []byte, i int64) []byte {
	out := bytes.Clone(raw)
	stampInto(out, i)
	return out
}

var cpuTime = server.CPUTime

// benchHub serves a hub on the bolt store in a temp dir, with one sink
// that accepts everything (as scenario 7 of confighub-bench, which has
// none, plus the fan-out a real stream has), and returns clients of it on
// conns connections. Their Push uploads every config; PushConfig goes
// through their Hub.
func benchHub(b *testing.B, conns int) []*hubclient.Client {
	b.Helper()
	reg := sink.NewRegistry()
	if err := reg.Register("nop", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) { return nopSink{}, nil }); err != nil {
		b.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(b.TempDir(), "confighub.db"))
	if err != nil {
		b.Fatal(err)
	}
	eng := engine.New(reg, engine.WithRecorder(st))
	h := hub.New(st, hub.PortsOf(eng))
	if err := h.Start(context.Background(), []*confighubv1.Sink{{Name: "s", Kind: "nop"}}); err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(h, server.WithMaxMessageBytes(64<<20))
	if err != nil {
		b.Fatal(err)
	}
	addr := harness.ServeGRPC(b, srv.GRPC, eng.Stop, func() { _ = st.Close() })
	cs := make([]*hubclient.Client, conns)
	for i := range cs {
		cs[i] = hubclient.New(harness.Dial(b, addr, grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20))), hubclient.WithUnaryLimit(0))
	}
	return cs
}

// benchRaw serves rawack's minimal durable ack (scenario 1's baseline in
// confighub-bench) with a file of size bytes preallocated (none
// when size is 0).
func benchRaw(b *testing.B, size int) *grpc.ClientConn {
	b.Helper()
	var f *os.File
	if size > 0 {
		var err error
		if f, err = rawack.Preallocate(filepath.Join(b.TempDir(), "raw"), size); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = f.Close() })
	}
	conn, stop, err := rawack.Serve(f, 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	})
	return conn
}

// BenchmarkPushConfig is the PushConfig round trip in one process (client
// and hub on the bolt store, over loopback), against the minimal durable
// ack of the same bytes (raw) and the bare gRPC call alone (grpc: no
// disk). Reported besides ns/op and allocs/op (client
// and server together): cpu-us/op, the process's CPU time per push. "serial"
// pushes one at a time; "c32" from 32 goroutines on one connection, as
// confighub-bench scenario 7 (where pushes/s is the figure); "c32x16conn"
// the hub's with the 32 spread over 16 connections, as 16 controllers
// would push.
//
//	go test -run '^$' -bench BenchmarkPushConfig -benchmem -benchtime 2000x ./internal/server
func BenchmarkPushConfig(b *testing.B) {
	for _, size := range []int{5 << 10, 1 << 20, 20 << 20} {
		raw := benchConfig(size)
		for _, conc := range []int{1, 32} {
			if conc > 1 && size > 64<<10 {
				continue
			}
			mode := "serial"
			if conc > 1 {
				mode = fmt.Sprintf("c%d", conc)
			}
			hubOn := func(conns int) func(b *testing.B) {
				return func(b *testing.B) {
					cs := benchHub(b, conns)
					push := func(ctx context.Context, g int, cfg []byte) error {
						_, err := cs[g%conns].Hub.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: cfg, Format: confighubv1.Format_FORMAT_JSON})
						return err
					}
					runPushes(b, conc, raw, push)
				}
			}
			b.Run(fmt.Sprintf("%dKiB/%s/hub", size>>10, mode), hubOn(1))
			if conc > 1 {
				b.Run(fmt.Sprintf("%dKiB/%sx16conn/hub", size>>10, mode), hubOn(16))
			}
			b.Run(fmt.Sprintf("%dKiB/%s/raw", size>>10, mode), func(b *testing.B) {
				conn := benchRaw(b, size+4096)
				push := func(ctx context.Context, _ int, cfg []byte) error {
					return rawack.Push(ctx, conn, cfg)
				}
				runPushes(b, conc, raw, push)
			})
			b.Run(fmt.Sprintf("%dKiB/%s/grpc", size>>10, mode), func(b *testing.B) {
				conn := benchRaw(b, 0)
				push := func(ctx context.Context, _ int, cfg []byte) error {
					return rawack.Push(ctx, conn, cfg)
				}
				runPushes(b, conc, raw, push)
			})
		}
	}
}

// runPushes makes b.N pushes of distinct configs (raw stamped with the
// push's number) from conc goroutines, each with its own buffer, and
// reports cpu-us/op and pushes/s.
func runPushes(b *testing.B, conc int, raw []byte, push func(ctx context.Context, g int, cfg []byte) error) {
	ctx := context.Background()
	for i := range 4 { // warm up: connection, pool, first generation
		if err := push(ctx, i, benchStamp(raw, int64(1e9+i))); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	done := make(chan error, conc)
	for g := range conc {
		cfg := bytes.Clone(raw)
		go func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					done <- nil
					return
				}
				stampInto(cfg, i)
				if err := push(ctx, g, cfg); err != nil {
					done <- err
					return
				}
			}
		}()
	}
	for range conc {
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushes/s")
}

// stampInto writes i's last 10 decimal digits over cfg's stamp, without
// allocating (allocs/op is the hub's and gRPC's).
func stampInto(cfg []byte, i int64) {
	d := cfg[len(cfg)-14 : len(cfg)-4]
	for k := len(d) - 1; k >= 0; k-- {
		d[k] = byte('0' + i%10)
		i /= 10
	}
}
