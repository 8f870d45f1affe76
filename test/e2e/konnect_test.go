package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// TestHungKonnectDoesNotDelayGateways: with a Konnect that never answers,
// three gateways apply every generation; the konnect sink is still stuck in
// its first sync.
func TestHungKonnectDoesNotDelayGateways(t *testing.T) {
	api := kongemu.NewEntityAPI()
	konnect := kongemu.New(kongemu.WithDBMode(), kongemu.WithRoutes(api.Routes))
	kurl, err := konnect.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { konnect.Release(); _ = konnect.Close() })
	konnect.Hang()

	var sinks strings.Builder
	var gws []*kongemu.Gateway
	for i := 0; i < 3; i++ {
		g := kongemu.New()
		u, err := g.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		gws = append(gws, g)
		fmt.Fprintf(&sinks, "- name: gw-%d\n  kong: {address: %q}\n", i, u)
	}
	fmt.Fprintf(&sinks, "- name: konnect\n  konnect: {address: %q, control_plane_id: cp-1, token: t0ken}\n  options: {timeout: 1h, min_interval: 10s}\n", kurl)
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, sinks.String()))
	api2 := confighubv1.NewConfigHubServiceClient(harness.Dial(t, h.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	for _, fx := range []string{"kong-service-facade__default.yaml", "ingress-v1-rule-with-tls-and-consumer__default.yaml", "httproute-example__default.yaml", "fallback-config-ingress__default.yaml"} {
		raw := harness.Fixture(t, fx)
		if _, err := api2.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: raw}); err != nil {
			t.Fatalf("push %s: %v", fx, err)
		}
		waitHash(t, gws, kongemu.ConfigHash(raw), fx)
	}
	// Konnect was reached (gated after the first gateway applied) and is
	// still hanging in that first sync: the gateways above did not wait.
	if err := konnect.WaitHanging(ctx, 1); err != nil {
		t.Fatalf("the konnect sink never reached the hung Konnect: %v", err)
	}
	// The hub records each gateway's apply right after the gateway answers;
	// wait for status to catch up with the gateways' hashes.
	harness.Eventually(t, 30*time.Second, func() bool {
		st, err := api2.GetStatus(ctx, &confighubv1.GetStatusRequest{})
		if err != nil {
			return false
		}
		for _, s := range st.GetSinks() {
			if s.GetSink() == "konnect" {
				if s.GetAppliedGeneration() != 0 {
					t.Fatalf("konnect applied %d while hung", s.GetAppliedGeneration())
				}
			} else if s.GetAppliedGeneration() != 4 {
				return false
			}
		}
		return true
	}, "every gateway reports generation 4 applied while konnect hangs")
}
