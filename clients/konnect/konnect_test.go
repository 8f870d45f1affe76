package konnect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cfgOf(t *testing.T, name string) *config.Config {
	t.Helper()
	raw := harness.Fixture(t, name)
	ck, err := config.Check(raw, config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	return config.New("default", 1, config.Hash(raw), ck.Format, raw, ck.JSON, nil, time.Unix(0, 0))
}

func spec(ks *confighubv1.KonnectSpec) *confighubv1.Sink {
	return &confighubv1.Sink{Name: "konnect", Spec: &confighubv1.Sink_Konnect{Konnect: ks}}
}

func TestRegisterDefaultsAndValidate(t *testing.T) {
	r := sink.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	k, ok := r.Lookup(Kind)
	if !ok {
		t.Fatal("konnect not registered")
	}
	d := k.Defaults
	if d.GetMinInterval().AsDuration() != 30*time.Second || d.GetGate() != confighubv1.Gate_GATE_ANY_GATEWAY ||
		d.GetTimeout().AsDuration() != 120*time.Second {
		t.Errorf("defaults = %v", d)
	}
	s := spec(&confighubv1.KonnectSpec{ControlPlaneId: "cp", Token: "t"})
	s.Options = &confighubv1.SinkOptions{MinInterval: durationpb.New(5 * time.Second)}
	if err := k.Validate(s); err == nil || !errors.Is(err, sink.ErrInvalidSpec) || !strings.Contains(err.Error(), "10s") {
		t.Errorf("min_interval 5s: %v, want an invalid spec naming 10s", err)
	}
	s.Options.MinInterval = durationpb.New(10 * time.Second)
	if err := k.Validate(s); err != nil {
		t.Errorf("min_interval 10s rejected: %v", err)
	}
}

func TestFactoryRejectsBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		ks   *confighubv1.KonnectSpec
		want string
	}{
		{&confighubv1.KonnectSpec{Token: "t"}, "control_plane_id"},
		{&confighubv1.KonnectSpec{ControlPlaneId: "a/b", Token: "t"}, "control_plane_id"},
		{&confighubv1.KonnectSpec{ControlPlaneId: "cp"}, "client certificate"},
		{&confighubv1.KonnectSpec{ControlPlaneId: "cp", Token: "t", TokenFile: "/x"}, "not both"},
		{&confighubv1.KonnectSpec{ControlPlaneId: "cp", TokenFile: "/nonexistent"}, "token_file"},
		{&confighubv1.KonnectSpec{ControlPlaneId: "cp", Address: "ftp://x", Token: "t"}, "http or https"},
		{&confighubv1.KonnectSpec{ControlPlaneId: "cp", Tls: &confighubv1.TLS{CertPem: "x"}}, "tls"},
	} {
		_, err := New(spec(tc.ks), sink.Deps{})
		if err == nil || !errors.Is(err, sink.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v) = %v, want an invalid spec mentioning %q", tc.ks, err, tc.want)
		}
	}
	if _, err := New(&confighubv1.Sink{Name: "x", Kind: Kind}, sink.Deps{}); err == nil {
		t.Error("a spec without konnect settings was accepted")
	}
}

func TestBaseURL(t *testing.T) {
	if got := BaseURL("", "abc"); got != "https://us.kic.api.konghq.com/kic/api/control-planes/abc" {
		t.Errorf("default base = %s", got)
	}
	if got := BaseURL("https://eu.kic.api.konghq.com/", "abc"); got != "https://eu.kic.api.konghq.com/kic/api/control-planes/abc" {
		t.Errorf("base = %s", got)
	}
}

// authRecorder records the Authorization header of entity requests.
type authRecorder struct {
	mu    sync.Mutex
	auths map[string]int
	next  http.Handler
}

func (a *authRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auths[r.Header.Get("Authorization")]++
	a.mu.Unlock()
	a.next.ServeHTTP(w, r)
}

func (a *authRecorder) seen() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.auths {
		out[k] = v
	}
	return out
}

// TestTokenFileIsReReadBeforeEachApply: a bearer token from a file syncs a
// control plane, and a rotated token is used by the next apply.
func TestTokenFileIsReReadBeforeEachApply(t *testing.T) {
	api := kongemu.NewEntityAPI()
	rec := &authRecorder{auths: map[string]int{}, next: api}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(spec(&confighubv1.KonnectSpec{Address: srv.URL, ControlPlaneId: "cp-7", TokenFile: tokFile}), sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(sink.Closer).Close()
	if caps := s.Describe(); caps.Gateway {
		t.Errorf("capabilities %+v: konnect is not a gateway and reports entity errors", caps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Apply(ctx, cfgOf(t, "httproute-example__default.yaml")); err != nil {
		t.Fatal(err)
	}
	if len(api.Entities("cp-7", "routes")) == 0 || api.Len("") != 0 {
		t.Fatalf("routes not in control plane cp-7 (root has %d entities)", api.Len(""))
	}
	if err := os.WriteFile(tokFile, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, cfgOf(t, "ingress-v1-rule-with-tls__default.yaml")); err != nil {
		t.Fatal(err)
	}
	seen := rec.seen()
	if seen["Bearer first"] == 0 || seen["Bearer second"] == 0 || len(seen) != 2 {
		t.Errorf("Authorization headers seen: %v, want only Bearer first then Bearer second", seen)
	}
}

func keyPair(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "confighub-client"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}

// TestClientCertificateAuth: the sink presents its client certificate to a
// control plane that requires one, and trusts the given CA.
func TestClientCertificateAuth(t *testing.T) {
	api := kongemu.NewEntityAPI()
	var mu sync.Mutex
	var peers []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			mu.Lock()
			peers = append(peers, r.TLS.PeerCertificates[0].Subject.CommonName)
			mu.Unlock()
		}
		api.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cert, key := keyPair(t)

	s, err := New(spec(&confighubv1.KonnectSpec{
		Address: srv.URL, ControlPlaneId: "cp-tls",
		Tls: &confighubv1.TLS{CaPem: ca, CertPem: cert, KeyPem: key},
	}), sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(sink.Closer).Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Apply(ctx, cfgOf(t, "httproute-example__default.yaml")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) == 0 || peers[0] != "confighub-client" {
		t.Errorf("client certificates seen: %v", peers)
	}
	if len(api.Entities("cp-tls", "services")) == 0 {
		t.Error("nothing synced over mTLS")
	}
}
