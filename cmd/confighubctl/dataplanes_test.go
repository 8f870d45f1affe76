package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

func TestStatusShowsDataPlanes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &confighubv1.GetStatusResponse{Stream: "default", Sinks: []*confighubv1.SinkStatus{
		{Sink: "dp-a", Kind: "kong-dp", State: confighubv1.SinkState_SINK_STATE_APPLIED, DataPlane: &confighubv1.DataPlaneStatus{
			NodeId: "dp-a", Hostname: "host-a", Version: "3.9.1", Address: "10.0.0.7:41234", Connected: true,
			ConnectedSince: timestamppb.New(now.Add(-5 * time.Minute)), LastPing: timestamppb.New(now.Add(-3 * time.Second)),
			ConfigHash: "0123456789abcdef0123456789abcdef", SyncStatus: "normal", Labels: map[string]string{"stream": "default", "zone": "z1"},
		}},
		{Sink: "dp-b", Kind: "kong-dp", State: confighubv1.SinkState_SINK_STATE_APPLIED, DataPlane: &confighubv1.DataPlaneStatus{
			NodeId: "dp-b", Version: "3.10.0", DisconnectedSince: timestamppb.New(now.Add(-time.Hour)), SyncStatus: "kong_version_incompatible",
		}},
	}}
	out := renderStatus(st, now, 0)
	for _, want := range []string{"data planes:", "host-a", "3.9.1", "10.0.0.7:41234", "connected 5m0s", "3s ago", "0123456789ab", "stream:default,zone:z1",
		"disconnected 1h0m0s ago", "kong_version_incompatible"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

func TestClusterCertIsKongsShape(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	var out, errw strings.Builder
	if code := runContext(context.Background(), []string{"cluster-cert", "--cert", cert, "--key", key}, &out, &errw); code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if leaf.Subject.CommonName != "kong_clustering" || !ok || pub.Curve != elliptic.P384() || len(leaf.DNSNames) != 0 || leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature) != nil {
		t.Fatalf("certificate %v", leaf.Subject)
	}
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v", fi.Mode())
	}
	if code := runContext(context.Background(), []string{"cluster-cert", "--cert", cert, "--key", key}, &out, &errw); code != 1 {
		t.Fatalf("a second run over the files: exit %d, want 1", code)
	}
	// Only the certificate exists: nothing is written, not even the key.
	newKey := filepath.Join(dir, "new.key")
	if code := runContext(context.Background(), []string{"cluster-cert", "--cert", cert, "--key", newKey}, &out, &errw); code != 1 {
		t.Fatalf("over an existing certificate: exit %d, want 1", code)
	}
	if _, err := os.Stat(newKey); !os.IsNotExist(err) {
		t.Fatalf("a key was left beside a certificate it does not match: %v", err)
	}
}
