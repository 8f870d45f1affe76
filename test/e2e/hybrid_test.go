package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu/dataplane"
)

// The data planes here are the project's emulator (test/kongemu/dataplane),
// not Kong: no real Kong data plane can run on the test machines.

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestHybridDataPlanesFollowTheHub runs the real binary with a cluster
// listener: emulated data planes connect, get every push, show in
// GetStatus and ListSinks as kong-dp sinks, and after a restart of the
// hub reconnect and are brought to the current generation.
// clusterCert writes a shared-mode cluster certificate and key and
// returns their files and the pair.
func clusterCert(t *testing.T) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM, err := hybrid.GenerateClusterCert(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cluster.crt"), filepath.Join(dir, "cluster.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

func TestHybridDataPlanesFollowTheHub(t *testing.T) {
	certFile, keyFile, pair := clusterCert(t)
	cluster := freeAddr(t)
	data := t.TempDir()
	args := []string{"--cluster-listen", cluster, "--cluster-cert", certFile, "--cluster-cert-key", keyFile, "--data-dir", data}
	h := harness.StartHub(t, bins, args...)
	api := confighubv1.NewConfigHubServiceClient(harness.Dial(t, h.Addr))

	shared := dataplane.NewShared()
	var dps []*dataplane.DP
	for i := 0; i < 3; i++ {
		d := dataplane.Start(dataplane.Options{Addr: cluster, Cert: pair, NodeID: fmt.Sprintf("dp-%d", i), Shared: shared,
			ReconnectMin: 100 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
		t.Cleanup(d.Stop)
		dps = append(dps, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	push := func(raw string) string {
		t.Helper()
		resp, err := api.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(raw)})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetHash()
	}
	waitAll := func(hash string) {
		t.Helper()
		for _, d := range dps {
			if err := d.WaitHash(ctx, hybrid.ConfigHash(&config.Config{Hash: hash})); err != nil {
				t.Fatal(err)
			}
		}
	}
	h1 := push(`{"_format_version":"3.0","services":[{"name":"a","host":"a.local","routes":[{"name":"r","paths":["/a"]}]}]}`)
	waitAll(h1)
	harness.Eventually(t, 10*time.Second, func() bool {
		st, err := api.GetStatus(ctx, &confighubv1.GetStatusRequest{})
		if err != nil || len(st.GetSinks()) != 3 {
			return false
		}
		for _, s := range st.GetSinks() {
			if s.GetKind() != hybrid.Kind || s.GetState() != confighubv1.SinkState_SINK_STATE_APPLIED || !s.GetDataPlane().GetConnected() ||
				s.GetDataPlane().GetConfigHash() != hybrid.ConfigHash(&config.Config{Hash: h1}) {
				return false
			}
		}
		return true
	}, "three kong-dp sinks APPLIED with their data planes' hash")
	admin := confighubv1.NewSinkAdminServiceClient(harness.Dial(t, h.Addr))
	ls, err := admin.ListSinks(ctx, &confighubv1.ListSinksRequest{})
	if err != nil || len(ls.GetSinks()) != 3 {
		t.Fatalf("ListSinks: %v %v", ls, err)
	}

	// A restart: the data planes keep their configuration, reconnect, and
	// are sent the current generation (a push made while they were away
	// is not lost).
	if err := h.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	h = harness.StartHub(t, bins, args...)
	api = confighubv1.NewConfigHubServiceClient(harness.Dial(t, h.Addr))
	h2 := push(`{"_format_version":"3.0","services":[{"name":"b","host":"b.local"}]}`)
	waitAll(h2)
	for _, d := range dps {
		if s := d.Stats(); s.Connects < 2 {
			t.Fatalf("%+v: the data plane did not reconnect", s)
		}
	}
}
