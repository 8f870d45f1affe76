package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // a watcher that compresses
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/test/harness"
)

// TestWatchersShareEncodings: the watchers of a stream receive the same
// changes, each marshalled once for all of them; a watcher whose client
// compresses reads every change compressed (its compressor decompresses
// each one), never the plain bytes sent to the others.
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
	gz, err := hc.WatchStatus(ctx, &confighubv1.WatchStatusRequest{}, grpc.UseCompressor(countingCompressorName))
	if err != nil {
		t.Fatal(err)
	}
	watches = append(watches, watch{"compressing", gz})
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
	// The compressing watcher's events (its start snapshot and every
	// change) were each decompressed (its empty request goes plain).
	if got, want := int(countingComp.decompressed.Load()), 1+len(seen[len(seen)-1]); got < want {
		t.Fatalf("%d messages decompressed, want at least %d: the compressing watcher got plain encodings", got, want)
	}
	// Every change read was marshalled once for all four watchers.
	// (A few changes sent after the last one read may be marshalled too;
	// unshared, it would be 4 per change.)
	if enc := server.WatchEncodes(srv); enc < len(seen[0]) || enc >= 2*len(seen[0]) {
		t.Fatalf("%d marshals for %d changes read by 4 watchers; want about %d", enc, len(seen[0]), len(seen[0]))
	}
}

// BenchmarkWatchStatusFanout: one push to a stream of one sink, watched by
// 200 WatchStatus streams over 4 connections, until every watcher has seen
// the generation applied. cpu-us/op is the process's CPU time per push
// (hub and the in-process readers), msgs/op what each watcher received.
func BenchmarkWatchStatusFanout(b *testing.B) {
	const watchers, conns = 200, 4
	addr, _ := startServerWith(b, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clients []confighubv1.ConfigHubServiceClient
	for range conns {
		clients = append(clients, confighubv1.NewConfigHubServiceClient(harness.Dial(b, addr)))
	}
	applied := make(chan uint64, watchers)
	var msgs atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range watchers {
		s, err := clients[i%conns].WatchStatus(ctx, &confighubv1.WatchStatusRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for {
				ev, err := s.Recv()
				if err != nil {
					return
				}
				msgs.Add(1)
				if g := ev.GetGeneration(); g != nil && g.GetSinksTotal() > 0 && g.GetSinksApplied() == g.GetSinksTotal() {
					applied <- g.GetGeneration()
				}
			}
		})
	}
	cfg := []byte(`{"_format_version":"3.0","services":[{"name":"s0","url":"http://x"}]}`)
	msgs.Store(0)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		raw := bytes.Replace(cfg, []byte(`"s0"`), fmt.Appendf(nil, `"s%d"`, i+1), 1)
		res, err := clients[0].PushConfig(ctx, &confighubv1.PushConfigRequest{Config: raw})
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < watchers; {
			if <-applied == res.GetGeneration() {
				n++
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(msgs.Load())/float64(b.N)/watchers, "msgs/op")
}

// varyingCompressor is a compressor whose output differs at each call (a
// counter before the bytes), as a compressor that stamps its output would.
type varyingCompressor struct{ n atomic.Uint32 }

func (c *varyingCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	if _, err := w.Write([]byte{byte(c.n.Add(1))}); err != nil {
		return nil, err
	}
	return nopCloser{w}, nil
}

func (c *varyingCompressor) Decompress(r io.Reader) (io.Reader, error) {
	if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
		return nil, err
	}
	return r, nil
}

func (*varyingCompressor) Name() string { return "varying-test" }

// countingCompressor marks its output and counts what it decompresses, so
// a test sees that a compressing client's messages came compressed (grpc
// reads a message sent plain without calling the compressor).
type countingCompressor struct{ decompressed atomic.Int64 }

const countingCompressorName = "counting-test"

var countingMark = []byte("cz")

func (c *countingCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	if _, err := w.Write(countingMark); err != nil {
		return nil, err
	}
	return nopCloser{w}, nil
}

func (c *countingCompressor) Decompress(r io.Reader) (io.Reader, error) {
	mark := make([]byte, len(countingMark))
	if _, err := io.ReadFull(r, mark); err != nil {
		return nil, err
	}
	if !bytes.Equal(mark, countingMark) {
		return nil, fmt.Errorf("not compressed by %s: starts %q", countingCompressorName, mark)
	}
	c.decompressed.Add(1)
	return r, nil
}

func (*countingCompressor) Name() string { return countingCompressorName }

// countingComp is registered once for the test binary: TestWatchersShareEncodings
// is its only user.
var countingComp = &countingCompressor{}

// grpc's compressor registry may only be written at initialisation.
func init() {
	encoding.RegisterCompressor(&varyingCompressor{})
	encoding.RegisterCompressor(countingComp)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestWatchSharesWithVaryingCompressor: streams whose compressor's output
// varies from call to call (so no two of their encodings match) still
// share each change's marshalled bytes, and each reads every change.
func TestWatchSharesWithVaryingCompressor(t *testing.T) {
	addr, _, srv := startHubServer(t, nil)
	hc := confighubv1.NewConfigHubServiceClient(harness.Dial(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var watches []grpc.ServerStreamingClient[confighubv1.WatchStatusResponse]
	for range 12 {
		s, err := hc.WatchStatus(ctx, &confighubv1.WatchStatusRequest{}, grpc.UseCompressor("varying-test"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		watches = append(watches, s)
	}
	if _, err := hc.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(`{"_format_version":"3.0"}`)}); err != nil {
		t.Fatal(err)
	}
	for i, s := range watches {
		for {
			ev, err := s.Recv()
			if err != nil {
				t.Fatalf("watcher %d: %v", i, err)
			}
			if ev.GetSink().GetAppliedGeneration() == 1 {
				break
			}
		}
	}
	if n := server.WatchEncodes(srv); n == 0 || n > 2 {
		t.Fatalf("%d marshals for the changes up to generation 1 read by 12 watchers; want 1 or 2", n)
	}
}
