package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startHub serves an in-process hub (the real engine, server and Kong sink)
// whose one sink, gw, is a Kong Admin API emulator, and returns a client.
func startHub(t *testing.T) *hubclient.Client {
	t.Helper()
	gw := kongemu.New()
	u, err := gw.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	reg := sink.NewRegistry()
	if err := builtin.Register(reg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(reg)
	h := hub.New(memory.New(), hub.PortsOf(eng))
	if err := h.Start(context.Background(), []*confighubv1.Sink{{Name: "gw", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: u}}}}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(h)
	if err != nil {
		t.Fatal(err)
	}
	return hubclient.New(harness.Dial(t, harness.ServeGRPC(t, srv.GRPC, eng.Stop)))
}

// write replaces a file of the folder and moves its modification time on,
// as an editor or a controller writing it would.
func write(t *testing.T, dir, name string, raw []byte, at time.Time) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// badPort is a KIC golden configuration whose first service (made by KIC
// from Service default/nginx) has a port Kong refuses.
func badPort(t *testing.T) []byte {
	good := harness.Fixture(t, "httproute-example__default.yaml")
	bad := bytes.Replace(good, []byte("  port: 8080\n"), []byte("  port: 80800\n"), 1)
	if bytes.Equal(good, bad) {
		t.Fatal("the fixture has no service on port 8080 any more")
	}
	return bad
}

// TestRejectedEntityMappedToItsObject: end to end, a KIC configuration
// in the folder is pushed and applied by the Kong gateway; the same with a
// bad port is rejected by the gateway, and the controller reports the
// Kubernetes Service that produced the rejected Kong service, with Kong's
// field error. An unchanged folder pushes nothing.
func TestRejectedEntityMappedToItsObject(t *testing.T) {
	var out harness.SyncBuffer
	dir := t.TempDir()
	f := &Folder{Dir: dir, Ctl: &Controller{Hub: startHub(t), Out: &out}, Wait: 30 * time.Second}
	ctx := context.Background()
	t0 := time.Now()

	write(t, dir, "default.yaml", harness.Fixture(t, "httproute-example__default.yaml"), t0)
	write(t, dir, "notes.txt", []byte("not a configuration"), t0)
	rej, err := f.Poll(ctx)
	if err != nil || len(rej) != 0 {
		t.Fatalf("first poll: %v %v\n%s", rej, err, out.String())
	}
	if !strings.Contains(out.String(), "stream default generation 1: applied by 1 sinks") {
		t.Fatalf("output %q, want generation 1 applied", out.String())
	}

	write(t, dir, "default.yaml", badPort(t), t0.Add(time.Second))
	rej, err = f.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := rej["default.yaml"]
	if len(got) != 1 {
		t.Fatalf("rejections %+v, want one\n%s", rej, out.String())
	}
	r := got[0]
	if r.Sink != "gw" || r.Object != "Service default/nginx" || r.Entity != "service httproute.default.httproute-testing.3" ||
		len(r.Errors) != 1 || !strings.HasPrefix(r.Errors[0], "port: ") {
		t.Fatalf("rejection %+v, want gw rejecting Service default/nginx's service on its port", r)
	}
	t.Log(out.String())
	want := "stream default generation 2: sink gw rejected Service default/nginx (service httproute.default.httproute-testing.3): port: "
	if !strings.Contains(out.String(), want) {
		t.Fatalf("output %q, want a line %q", out.String(), want)
	}

	before := out.String()
	write(t, dir, "default.yaml", badPort(t), t0.Add(2*time.Second)) // touched, same bytes
	if rej, err := f.Poll(ctx); err != nil || len(rej) != 0 || out.String() != before {
		t.Fatalf("a poll of an unchanged folder: %v %v, printed %q", rej, err, strings.TrimPrefix(out.String(), before))
	}
}

// TestRunPollsOnItsClock: Run reads the folder at once, then at every
// tick of its clock.
func TestRunPollsOnItsClock(t *testing.T) {
	var out harness.SyncBuffer
	dir := t.TempDir()
	f := &Folder{Dir: dir, Ctl: &Controller{Hub: startHub(t), Out: &out}, Wait: 30 * time.Second}
	clock := clockwork.NewFakeClock()
	t0 := time.Now()
	write(t, dir, "default.json", []byte(`{"_format_version":"3.0","services":[{"name":"a","host":"a.example"}]}`), t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, clock, time.Minute) }()
	harness.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "generation 1: applied") }, "the first read")

	write(t, dir, "default.json", []byte(`{"_format_version":"3.0","services":[{"name":"b","host":"b.example"}]}`), t0.Add(time.Second))
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "generation 2") {
		t.Fatal("read before its tick")
	}
	clock.Advance(time.Minute)
	harness.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "generation 2: applied") }, "the read at the tick")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
