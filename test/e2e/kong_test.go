package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// fleet is a real hub process with n emulated DB-less Kong gateways, one
// kong sink each (gw-0 ... gw-n-1).
type fleet struct {
	hub *harness.Hub
	gws []*kongemu.Gateway
	api confighubv1.ConfigHubServiceClient
}

// startFleet starts n gateways and a hub whose sinks file lists them, each
// sink with the given per-attempt timeout, a 0.2s status poll and a short
// backoff.
func startFleet(t *testing.T, n int, timeout string) *fleet {
	t.Helper()
	return startFleetWith(t, n, timeout, "")
}

// startFleetWith is startFleet with more kong spec fields (YAML lines
// indented by four spaces) on every sink.
func startFleetWith(t *testing.T, n int, timeout, kongExtra string) *fleet {
	t.Helper()
	reg := sink.NewRegistry()
	if err := builtin.Register(reg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup("kong"); !ok {
		t.Fatal("the hub binary has no kind kong: clients/builtin must register clients/kong (kong.Register)")
	}
	cache := kongemu.NewCache()
	f := &fleet{}
	var sinks strings.Builder
	for i := 0; i < n; i++ {
		g := kongemu.New(kongemu.WithCache(cache))
		u, err := g.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		f.gws = append(f.gws, g)
		fmt.Fprintf(&sinks, "- name: gw-%d\n  kong:\n    address: %s\n    status_interval: 0.2s\n%s  options:\n    timeout: %s\n    backoff: {initial: 0.05s, max: 0.5s}\n", i, u, kongExtra, timeout)
	}
	f.hub = harness.StartHub(t, bins, "--sinks", writeSinks(t, sinks.String()))
	f.api = confighubv1.NewConfigHubServiceClient(harness.Dial(t, f.hub.Addr))
	return f
}

func (f *fleet) push(t *testing.T, raw []byte) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := f.api.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: raw})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return resp.GetGeneration()
}

func (f *fleet) status(t *testing.T) *confighubv1.GetStatusResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := f.api.GetStatus(ctx, &confighubv1.GetStatusRequest{})
	if err != nil {
		t.Fatalf("GetStatus: %v", err)
	}
	return st
}

// waitHash waits until each of the gateways holds hash.
func waitHash(t *testing.T, gws []*kongemu.Gateway, hash, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, g := range gws {
		if err := g.Wait(ctx, func(v kongemu.View) bool { return v.Hash == hash }); err != nil {
			t.Fatalf("%s: gateway %d (%s) never got hash %s: %v", what, i, g.URL(), hash, err)
		}
	}
}

// TestKongFleetEveryFixture: every kic-golden file reaches every one of 10
// gateways, each gateway's configuration_hash equal to the expected one.
func TestKongFleetEveryFixture(t *testing.T) {
	f := startFleet(t, 10, "10s")
	files := harness.Fixtures(t)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f.push(t, raw)
		waitHash(t, f.gws, kongemu.ConfigHash(raw), filepath.Base(file))
	}
	for i, g := range f.gws {
		if n := g.Pushes(); n > len(files) {
			t.Errorf("gateway %d got %d pushes for %d configs", i, n, len(files))
		}
	}
}

// brokenConfig has a route with a field Kong does not know; the route
// carries KIC's k8s-* tags. (A route naming a missing service would not
// do: Kong 3.9 cannot flatten reference errors and answers without any
// entity error, see clients/kong TestApply400DanglingReferences.)
const brokenConfig = `_format_version: "3.0"
services:
- name: default.echo.80
  host: echo.default.80.svc
  port: 80
  routes:
  - name: default.echo.echo.0
    paths: ["/echo"]
  - name: default.broken.broken.0
    paths: ["/broken"]
    colour: red
    tags:
    - k8s-name:broken
    - k8s-namespace:default
    - k8s-kind:HTTPRoute
    - k8s-group:gateway.networking.k8s.io
`

// TestKongInvalidConfigReportedWithEntityErrors: an invalid configuration
// leaves every gateway on the previous one, is not retried, and grpcurl
// GetStatus shows SINK_STATE_FAILED with the entity errors naming the broken
// route and its k8s-* tags.
func TestKongInvalidConfigReportedWithEntityErrors(t *testing.T) {
	f := startFleet(t, 10, "10s")
	good := harness.Fixture(t, "httproute-example__default.yaml")
	f.push(t, good)
	goodHash := kongemu.ConfigHash(good)
	waitHash(t, f.gws, goodHash, "good config")

	gen := f.push(t, []byte(brokenConfig))
	var out string
	harness.Eventually(t, 30*time.Second, func() bool {
		var err error
		out, err = harness.Grpcurl(t, "-plaintext", "-d", `{"stream":"default"}`, f.hub.Addr, "confighub.v1.ConfigHubService/GetStatus")
		return err == nil && strings.Count(out, "SINK_STATE_FAILED") == len(f.gws)
	}, "grpcurl GetStatus shows all %d sinks FAILED", len(f.gws))
	t.Logf("grpcurl GetStatus after an invalid push (excerpt):\n%s", excerpt(out, 2500))

	var st struct {
		Sinks []struct {
			Sink              string `json:"sink"`
			State             string `json:"state"`
			LastErrorCode     string `json:"lastErrorCode"`
			AppliedGeneration string `json:"appliedGeneration"`
			EntityErrors      []struct {
				EntityType string   `json:"entityType"`
				EntityName string   `json:"entityName"`
				EntityTags []string `json:"entityTags"`
				Errors     []struct {
					Type    string `json:"type"`
					Field   string `json:"field"`
					Message string `json:"message"`
				} `json:"errors"`
			} `json:"entityErrors"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("GetStatus output: %v\n%s", err, out)
	}
	for _, s := range st.Sinks {
		if s.State != "SINK_STATE_FAILED" || s.LastErrorCode != "rejected" || len(s.EntityErrors) != 1 {
			t.Fatalf("sink %s: state %s code %s entity errors %+v", s.Sink, s.State, s.LastErrorCode, s.EntityErrors)
		}
		ee := s.EntityErrors[0]
		tags := strings.Join(ee.EntityTags, ",")
		if ee.EntityType != "route" || ee.EntityName != "default.broken.broken.0" ||
			!strings.Contains(tags, "k8s-name:broken") || !strings.Contains(tags, "k8s-kind:HTTPRoute") ||
			len(ee.Errors) != 1 || ee.Errors[0].Field != "colour" || ee.Errors[0].Message != "unknown field" {
			t.Fatalf("sink %s entity error %+v", s.Sink, ee)
		}
	}
	for i, g := range f.gws {
		if g.Hash() != goodHash {
			t.Fatalf("gateway %d left the previous config: %s", i, g.Hash())
		}
	}

	// The rejected hash is not retried: a new generation is what moves on.
	fixed := []byte(strings.Replace(brokenConfig, "    colour: red\n", "", 1))
	if next := f.push(t, fixed); next <= gen {
		t.Fatalf("generation %d after %d", next, gen)
	}
	waitHash(t, f.gws, kongemu.ConfigHash(fixed), "fixed config")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, g := range f.gws {
		// The fixed config's 201 is logged a moment after its hash shows.
		if err := g.Wait(ctx, func(v kongemu.View) bool { return g.Pushes() >= 3 && v.InFlight == 0 }); err != nil {
			t.Fatal(err)
		}
		rejected := 0
		for _, r := range g.Requests() {
			if r.Path == "/config" && r.Status == http.StatusBadRequest {
				rejected++
			}
		}
		if rejected != 1 {
			t.Errorf("gateway %d answered 400 %d times; the rejected hash must be sent once", i, rejected)
		}
	}
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n..."
}

// TestKongRestartedGatewayRefilled: a gateway that restarts empty (hash all
// zeros) gets the current configuration again from the status poll.
func TestKongRestartedGatewayRefilled(t *testing.T) {
	f := startFleet(t, 3, "10s")
	raw := harness.Fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	f.push(t, raw)
	waitHash(t, f.gws, kongemu.ConfigHash(raw), "first apply")
	before := f.gws[1].Loads()
	f.gws[1].Restart()
	if f.gws[1].Hash() != kongemu.EmptyHash {
		t.Fatal("restart did not empty the gateway")
	}
	waitHash(t, f.gws[1:2], kongemu.ConfigHash(raw), "refill after restart")
	if f.gws[1].Loads() != before+1 {
		t.Fatalf("loads %d, want %d", f.gws[1].Loads(), before+1)
	}
	for _, i := range []int{0, 2} {
		if f.gws[i].Loads() != 1 {
			t.Errorf("gateway %d was pushed again (%d loads) though it did not restart", i, f.gws[i].Loads())
		}
	}
}

// TestKongRetryAfterHonoured: a gateway answering 429 with Retry-After: 2 is
// not asked again before 2 s, then gets the configuration; the others are
// not held up.
func TestKongRetryAfterHonoured(t *testing.T) {
	f := startFleet(t, 3, "10s")
	f.gws[0].ScriptConfig(kongemu.Step{Status: http.StatusTooManyRequests, RetryAfter: "2"})
	raw := harness.Fixture(t, "httproute-example__default.yaml")
	f.push(t, raw)
	waitHash(t, f.gws[1:], kongemu.ConfigHash(raw), "gateways without 429")
	waitHash(t, f.gws[:1], kongemu.ConfigHash(raw), "gateway after its 429")
	// The log entry of the 201 follows the hash change by a moment.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var posts []kongemu.Request
	_ = f.gws[0].Wait(ctx, func(kongemu.View) bool {
		posts = posts[:0]
		for _, r := range f.gws[0].Requests() {
			if r.Path == "/config" {
				posts = append(posts, r)
			}
		}
		return len(posts) >= 2
	})
	if len(posts) != 2 || posts[0].Status != http.StatusTooManyRequests || posts[1].Status != http.StatusCreated {
		t.Fatalf("POST /config log %+v, want 429 then 201", posts)
	}
	// The hub's backoff here is 50ms; only Retry-After explains a 2s gap.
	if gap := posts[1].Time.Sub(posts[0].Time); gap < 2*time.Second {
		t.Fatalf("retried %v after a 429 with Retry-After: 2", gap)
	}
}

// TestKongHungGatewayDoesNotDelayOthers: with one gateway hung, the other
// nine apply the configuration while it is still hanging.
func TestKongHungGatewayDoesNotDelayOthers(t *testing.T) {
	f := startFleet(t, 10, "60s")
	hung := f.gws[9]
	hung.Hang()
	raw := harness.Fixture(t, "kong-service-facade__default.yaml")
	f.push(t, raw)
	waitHash(t, f.gws[:9], kongemu.ConfigHash(raw), "the nine healthy gateways")
	if hung.Hash() == kongemu.ConfigHash(raw) {
		t.Fatal("the hung gateway applied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hung.WaitHanging(ctx, 1); err != nil {
		t.Fatalf("the hub never reached the hung gateway: %v", err)
	}
	// The hub reports the nine APPLIED while gw-9 still hangs: they did not
	// wait for it.
	harness.Eventually(t, 30*time.Second, func() bool {
		applied := 0
		for _, s := range f.status(t).GetSinks() {
			if s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED && s.GetSink() != "gw-9" {
				applied++
			}
		}
		return applied == 9
	}, "9 sinks APPLIED while gw-9 hangs")
	if err := hung.Wait(ctx, func(v kongemu.View) bool { return v.Hanging >= 1 }); err != nil || hung.Loads() != 0 {
		t.Fatalf("gw-9 stopped hanging before its release: %v, loads %d", err, hung.Loads())
	}
	hung.Release()
	waitHash(t, f.gws[9:], kongemu.ConfigHash(raw), "the released gateway")
}
