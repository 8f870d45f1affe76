package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// TestHungSinkDelaysNobody: one sink hangs for ever (a gateway that never
// answers, with a long per-attempt timeout); a healthy file sink applies
// every generation, every push is acknowledged, and a watcher sees every
// one of the file sink's applies while the hung sink still hangs.
func TestHungSinkDelaysNobody(t *testing.T) {
	hung := kongemu.New()
	u, err := hung.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hung.Release(); _ = hung.Close() })
	hung.Hang()
	out := filepath.Join(t.TempDir(), "out.json")
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, fmt.Sprintf(
		"- name: hung\n  kong: {address: %q}\n  options: {timeout: 1h}\n- name: healthy\n  file: {path: %q}\n", u, out)), "--file-sink-root", filepath.Dir(out))
	cl := hubclient.New(harness.Dial(t, h.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	seen := map[uint64]bool{} // generations the watcher saw the healthy sink apply
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() {
		wdone <- cl.Watch(wctx, "", 0, func(ev *confighubv1.WatchStatusResponse) error {
			mu.Lock()
			defer mu.Unlock()
			sinks := ev.GetSnapshot().GetSinks()
			if s := ev.GetSink(); s != nil {
				sinks = append(sinks, s)
			}
			for _, s := range sinks {
				if s.GetSink() == "healthy" && s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED {
					seen[s.GetAppliedGeneration()] = true
				}
			}
			return nil
		})
	}()
	const pushes = 10
	for i := 1; i <= pushes; i++ {
		body := genConfig(i, 256)
		res, err := cl.Push(ctx, hubclient.Push{Config: body})
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		// Each generation is applied by the healthy sink before the next
		// push, so "every generation" is observable, not coalesced away.
		harness.Eventually(t, 20*time.Second, func() bool {
			b, err := os.ReadFile(out)
			return err == nil && config.Hash(b) == res.GetHash()
		}, "healthy sink applies generation %d", res.GetGeneration())
		harness.Eventually(t, 20*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return seen[res.GetGeneration()]
		}, "the watcher sees generation %d applied", res.GetGeneration())
	}
	if err := hung.Wait(ctx, func(v kongemu.View) bool { return v.Hanging >= 1 }); err != nil || hung.Loads() != 0 {
		t.Fatalf("the hung gateway must still be hanging with nothing loaded: %v loads=%d", err, hung.Loads())
	}
	st, err := cl.Hub.GetStatus(ctx, &confighubv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.GetSinks() {
		if s.GetSink() == "hung" && s.GetState() != confighubv1.SinkState_SINK_STATE_APPLYING {
			t.Errorf("hung sink state %v, want APPLYING", s.GetState())
		}
	}
	wcancel()
	<-wdone
}

// TestBurstCoalesces: 200 pushes in a burst into a gateway that takes 100ms
// per apply: it applies a handful of times, ends on the last generation, and
// status reports the coalesced count.
func TestBurstCoalesces(t *testing.T) {
	gw := kongemu.New()
	u, err := gw.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	gw.SetLatency(100 * time.Millisecond)
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, fmt.Sprintf("- name: slow\n  kong: {address: %q}\n", u)))
	cl := hubclient.New(harness.Dial(t, h.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const pushes = 200
	var last *confighubv1.PushConfigResponse
	for i := 1; i <= pushes; i++ {
		res, err := cl.Push(ctx, hubclient.Push{Config: genConfig(i, 512)})
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		last = res
	}
	var sink *confighubv1.SinkStatus
	harness.Eventually(t, 30*time.Second, func() bool {
		st, err := cl.Hub.GetStatus(ctx, &confighubv1.GetStatusRequest{})
		if err != nil || len(st.GetSinks()) != 1 {
			return false
		}
		sink = st.GetSinks()[0]
		return sink.GetAppliedGeneration() == last.GetGeneration() && sink.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED
	}, "the slow sink applies the last generation %d", last.GetGeneration())
	posts := gw.Pushes()
	t.Logf("burst: pushes=%d gateway POST /config=%d applies_total=%d coalesced=%d", pushes, posts, sink.GetAppliesTotal(), sink.GetCoalesced())
	if posts == 0 || posts > pushes/4 {
		t.Fatalf("the gateway got %d POSTs for %d pushes: the slot did not coalesce", posts, pushes)
	}
	if sink.GetCoalesced() == 0 || sink.GetCoalesced()+sink.GetAppliesTotal() < pushes/2 {
		t.Fatalf("status coalesced=%d applies=%d for %d pushes", sink.GetCoalesced(), sink.GetAppliesTotal(), pushes)
	}
	if gw.Hash() != kongemu.ConfigHash(genConfig(pushes, 512)) {
		t.Fatal("the gateway does not hold the last generation")
	}
}
