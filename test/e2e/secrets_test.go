package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/test/authtest"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// clientPair returns a client certificate and its private key, PEM.
func clientPair(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	p := authtest.NewCA(t, "secrets").Client(t, "konnect-client")
	c, err := os.ReadFile(p.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(c), string(k)
}

// headerRecorder serves a gateway and remembers the last Kong-Admin-Token
// it was sent.
type headerRecorder struct {
	mu    sync.Mutex
	token string
	next  http.Handler
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/config" {
		h.mu.Lock()
		h.token = r.Header.Get("Kong-Admin-Token")
		h.mu.Unlock()
	}
	h.next.ServeHTTP(w, r)
}

func (h *headerRecorder) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
}

// TestSinkSecretsNeverShown: sinks holding every kind of secret (a kong
// sink's headers, a kong-db sink's headers, a Konnect token and inline
// client key, a plugin's secret settings), each value distinctive; every
// RPC called with every role (read, push, admin), the debug log and
// /metrics never show one. ListSinks shows each as a fingerprinted
// placeholder, and a PutSink of the spec as read keeps the secrets (the
// gateway still gets its token).
func TestSinkSecretsNeverShown(t *testing.T) {
	certPEM, keyPEM := clientPair(t)
	secrets := map[string]string{
		"kong header":      "kadm-7f3e9d1c-secret",
		"kong other":       "Basic dXNlcjpzZWNyZXQtOGE0Yg==",
		"kong-db header":   "kdb-2b8c6a0e-secret",
		"konnect token":    "kpat_4d9a1f7b2c8e6a0d3f5b9c1e7a2d4f6b8c0e",
		"tls key":          keyPEM,
		"tls key (1 line)": strings.Split(keyPEM, "\n")[1],
		"plugin token":     "plg-5e1c9b3a-secret",
		"plugin nested":    "plg-nested-0c7d2e4f",
	}
	g := kongemu.New()
	rec := &headerRecorder{next: g.Handler()}
	gw := httptest.NewServer(rec)
	defer gw.Close()
	indent := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n        ") }
	sinksFile := fmt.Sprintf(`- name: gw
  kong:
    address: %s
    headers: {Kong-Admin-Token: %q, Authorization: %q}
  options: {backoff: {initial: 0.05s, max: 0.2s}}
- name: db
  kong_db:
    address: http://127.0.0.1:1
    headers: {Kong-Admin-Token: %q}
  options: {backoff: {initial: 0.05s, max: 0.2s}}
- name: kn
  konnect:
    address: http://127.0.0.1:1
    control_plane_id: cp-1
    token: %q
    tls:
      cert_pem: |
        %s
      key_pem: |
        %s
  options: {gate: GATE_NONE, min_interval: 10s, backoff: {initial: 0.05s, max: 0.2s}}
- name: pl
  plugin:
    address: 127.0.0.1:1
    settings:
      url: https://hooks.example.com/x
      api_token: %q
      auth: {user: u, password: %q}
  options: {backoff: {initial: 0.05s, max: 0.2s}}
`, gw.URL, secrets["kong header"], secrets["kong other"], secrets["kong-db header"], secrets["konnect token"],
		indent(certPEM), indent(keyPEM), secrets["plugin token"], secrets["plugin nested"])
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, sinksFile), "--auth-tokens", writeSinks(t, opsTokens), "--log-level", "debug")
	maddr := h.WaitOutput(t, metricsRE, 10*time.Second)
	cc := harness.Dial(t, h.Addr)
	api, admin := confighubv1.NewConfigHubServiceClient(cc), confighubv1.NewSinkAdminServiceClient(cc)

	var seen strings.Builder
	show := func(what string, m proto.Message, err error) {
		fmt.Fprintf(&seen, "== %s\n", what)
		if m != nil {
			seen.WriteString(protojson.Format(m))
		}
		if err != nil {
			fmt.Fprintf(&seen, "error: %v\n", err)
		}
	}
	roles := []struct{ name, token string }{{"read", "e2e-read-4b1f0c"}, {"push", "e2e-push-9a27d3"}, {"admin", "e2e-admin-51c8e2"}}
	var listed []*confighubv1.Sink
	for _, r := range roles {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+r.token), 30*time.Second)
		push, err := api.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(minimalConfig)})
		show(r.name+" PushConfig", push, err)
		if up, err := api.UploadConfig(ctx); err == nil {
			_ = up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{TotalSize: uint64(len(minimalConfig))}}})
			_ = up.Send(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: []byte(minimalConfig)}})
			res, err := up.CloseAndRecv()
			show(r.name+" UploadConfig", res, err)
		}
		if r.name != "read" {
			harness.Eventually(t, 20*time.Second, func() bool { return rec.last() == secrets["kong header"] }, "the gateway gets its token")
		}
		st, err := api.GetStatus(ctx, &confighubv1.GetStatusRequest{})
		show(r.name+" GetStatus", st, err)
		if w, err := api.WatchStatus(ctx, &confighubv1.WatchStatusRequest{}); err == nil {
			ev, err := w.Recv()
			show(r.name+" WatchStatus", ev, err)
		}
		cfg, err := api.GetConfig(ctx, &confighubv1.GetConfigRequest{})
		show(r.name+" GetConfig", cfg, err)
		for _, name := range []string{"gw", "db", "kn", "pl"} {
			c, err := api.GetConfig(ctx, &confighubv1.GetConfigRequest{Sink: name, Failed: true})
			show(r.name+" GetConfig failed "+name, c, err)
		}
		ls, err := admin.ListSinks(ctx, &confighubv1.ListSinksRequest{})
		show(r.name+" ListSinks", ls, err)
		if err != nil {
			t.Fatalf("ListSinks as %s: %v", r.name, err)
		}
		listed = ls.GetSinks()
		// Put every sink back as read (a client's read-modify-write).
		for _, s := range listed {
			out, err := admin.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: s})
			show(r.name+" PutSink "+s.GetName(), out, err)
			if want := codes.PermissionDenied; r.name != "admin" && status.Code(err) != want {
				t.Fatalf("PutSink as %s: %v, want %s", r.name, err, want)
			} else if r.name == "admin" && err != nil {
				t.Fatalf("PutSink of %s as read: %v", s.GetName(), err)
			}
		}
		// A placeholder that is not the stored value's: InvalidArgument.
		bad := proto.Clone(listed[0]).(*confighubv1.Sink)
		bad.Name = "copy-" + r.name
		_, err = admin.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: bad})
		show(r.name+" PutSink copy", nil, err)
		if r.name == "admin" && status.Code(err) != codes.InvalidArgument {
			t.Fatalf("PutSink of a copy with placeholders: %v, want InvalidArgument", err)
		}
		_, err = admin.DeleteSink(ctx, &confighubv1.DeleteSinkRequest{Name: "db"})
		show(r.name+" DeleteSink", nil, err)
		cancel()
	}
	// The secrets are still in force after the puts: a new generation
	// reaches the gateway with its token.
	actx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer e2e-admin-51c8e2")
	if _, err := api.PushConfig(actx, &confighubv1.PushConfigRequest{Config: []byte(strings.Replace(minimalConfig, "example.com", "example.org", 1))}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 20*time.Second, func() bool { return strings.Contains(string(g.Config()), "example.org") }, "the gateway gets the new generation")
	if rec.last() != secrets["kong header"] {
		t.Fatalf("after a PutSink of the redacted spec the gateway got token %q", rec.last())
	}
	for _, s := range listed {
		js := protojson.Format(s)
		if !strings.Contains(js, "<redacted:") {
			t.Errorf("ListSinks shows no placeholder for %s: %s", s.GetName(), js)
		}
	}
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"responses": seen.String(), "debug log": h.Output(), "/metrics": string(metrics)}
	for what, out := range outputs {
		for name, secret := range secrets {
			if strings.Contains(out, secret) {
				i := strings.Index(out, secret)
				t.Errorf("%s shows the %s: ...%s...", what, name, out[max(0, i-200):min(len(out), i+len(secret)+50)])
			}
		}
	}
	if !strings.Contains(h.Output(), "level=DEBUG") {
		t.Fatalf("the hub logged nothing at debug level: the test would prove nothing about it")
	}
	if t.Failed() {
		t.Logf("responses:\n%s", seen.String())
	}
}
