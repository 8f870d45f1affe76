package hubclienttest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHub is an in-process hub on a loopback port that can be restarted on
// the same address.
type testHub struct {
	t    *testing.T
	addr string
	srv  *server.Server
	eng  *engine.Engine
	done chan struct{}
}

// startHub serves a new hub on addr; with first, that config is pushed
// before the hub serves.
func startHub(t *testing.T, addr string, first ...[]byte) *testHub {
	t.Helper()
	eng := engine.New(sink.NewRegistry())
	h := hub.New(memory.New(), hub.PortsOf(eng), hub.WithMaxConfigBytes(1<<30))
	for _, c := range first {
		if _, err := h.Push(context.Background(), hub.PushInput{Config: c}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(h)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	th := &testHub{t: t, addr: lis.Addr().String(), srv: srv, eng: eng, done: make(chan struct{})}
	go func() { _ = srv.GRPC.Serve(lis); close(th.done) }()
	return th
}

func (h *testHub) stop() {
	h.srv.GRPC.Stop()
	<-h.done
	h.eng.Stop()
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func cfg(n int) []byte {
	return []byte(`{"_format_version":"3.0","_comment":"` + string(rune('a'+n%26)) + `","services":[]}`)
}

func TestPushSwitchesToUploadAboveTheUnaryLimit(t *testing.T) {
	h := startHub(t, "127.0.0.1:0")
	defer h.stop()
	cc := dial(t, h.addr)
	defer cc.Close()
	var progress []int64
	c := hubclient.New(cc, hubclient.WithUnaryLimit(64), hubclient.WithChunkBytes(16), hubclient.WithProgress(func(sent, _ int64) { progress = append(progress, sent) }))
	small := cfg(1)[:0]
	small = append(small, `{"_format_version":"3.0"}`...)
	res, err := c.Push(context.Background(), hubclient.Push{Config: small})
	if err != nil || res.GetGeneration() != 1 || len(progress) != 0 {
		t.Fatalf("small push: %v %v, progress %v (a unary push reports no progress)", res, err, progress)
	}
	big := []byte(`{"_format_version":"3.0","services":[` + `{"name":"a","host":"b"},{"name":"c","host":"d"},{"name":"e","host":"f"}` + `]}`)
	res, err = c.Push(context.Background(), hubclient.Push{Config: big})
	if err != nil || res.GetGeneration() != 2 || res.GetHash() != config.Hash(big) {
		t.Fatalf("big push: %v %v", res, err)
	}
	if len(progress) != (len(big)+15)/16 || progress[len(progress)-1] != int64(len(big)) {
		t.Fatalf("upload progress %v for %d bytes in 16-byte chunks", progress, len(big))
	}
	// A rejected upload returns the hub's status, not io.EOF.
	_, err = c.Push(context.Background(), hubclient.Push{Config: append([]byte(`{"services":[]`), make([]byte, 100)...)})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad upload: %v, want InvalidArgument", err)
	}
}

// TestPushUploadsWithTheCallersHash: with WithUnaryLimit(0) every push
// uploads, an empty config too (the hub's refusal is the upload header's),
// and a Push carrying Hash sends that hash as it is: the hub refuses a
// config that does not hash to it and acks one that does.
func TestPushUploadsWithTheCallersHash(t *testing.T) {
	h := startHub(t, "127.0.0.1:0")
	defer h.stop()
	cc := dial(t, h.addr)
	defer cc.Close()
	c := hubclient.New(cc, hubclient.WithUnaryLimit(0))
	_, err := c.Push(context.Background(), hubclient.Push{})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "total_size") {
		t.Fatalf("empty push: %v, want the upload's InvalidArgument (total_size)", err)
	}
	body := cfg(1)
	_, err = c.Push(context.Background(), hubclient.Push{Config: body, Hash: config.Hash(cfg(2))})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("push with another config's hash: %v, want InvalidArgument", err)
	}
	res, err := c.Push(context.Background(), hubclient.Push{Config: body, Hash: config.Hash(body)})
	if err != nil || res.GetGeneration() != 1 || res.GetHash() != config.Hash(body) {
		t.Fatalf("push with its own hash: %v %v, want generation 1 (the refused push made none) with hash %s", res, err, config.Hash(body))
	}
}

// TestWatchResumesAfterDisconnect: the hub goes away and comes back on the
// same address; Watch reconnects on its own, resumes (here the new hub has
// none of the old history, so it gets a fresh snapshot) and goes on
// delivering changes.
func TestWatchResumesAfterDisconnect(t *testing.T) {
	h := startHub(t, "127.0.0.1:0")
	addr := h.addr
	cc := dial(t, addr)
	defer cc.Close()
	c := hubclient.New(cc, hubclient.WithWatchBackoff(10*time.Millisecond, 50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Push(ctx, hubclient.Push{Config: cfg(1)}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var snapshots []string
	var gens []uint64
	got := make(chan struct{}, 100)
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(wctx, "", 0, func(ev *confighubv1.WatchStatusResponse) error {
			mu.Lock()
			if ev.GetSnapshot() != nil {
				snapshots = append(snapshots, ev.GetSnapshotReason())
				gens = append(gens, ev.GetSnapshot().GetGeneration())
			}
			if g := ev.GetGeneration(); g != nil {
				gens = append(gens, g.GetGeneration())
			}
			mu.Unlock()
			got <- struct{}{}
			return nil
		})
	}()
	<-got // the first snapshot
	h.stop()
	// The new hub knows the stream before it serves (as a restarted hub
	// on its store would), so the reconnect finds it.
	h2 := startHub(t, addr, cfg(2))
	defer h2.stop()
	for {
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("no resumed watch: snapshots %v generations %v", snapshots, gens)
		}
		mu.Lock()
		ok := len(snapshots) >= 2 && gens[len(gens)-1] == 1
		mu.Unlock()
		if ok {
			break
		}
	}
	wcancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Watch returned %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if snapshots[0] != "start" || snapshots[1] != "resume-gap" {
		t.Fatalf("snapshot reasons %v, want [start resume-gap]", snapshots)
	}
}

func TestWatchReturnsPermanentErrors(t *testing.T) {
	h := startHub(t, "127.0.0.1:0")
	defer h.stop()
	cc := dial(t, h.addr)
	defer cc.Close()
	err := hubclient.New(cc).Watch(context.Background(), "no-such-stream", 0, func(*confighubv1.WatchStatusResponse) error { return nil })
	if status.Code(err) != codes.NotFound {
		t.Fatalf("watch of an unknown stream: %v, want NotFound (not a retry loop)", err)
	}
}
