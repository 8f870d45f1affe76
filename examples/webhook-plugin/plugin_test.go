package main

import (
	"context"
	"crypto/hmac"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/plugin"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type hook struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	status  int
	retry   string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, b)
	h.headers = append(h.headers, r.Header.Clone())
	code, retry := h.status, h.retry
	h.mu.Unlock()
	if retry != "" {
		w.Header().Set("Retry-After", retry)
	}
	if code == 0 {
		code = http.StatusNoContent
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, "hook says hi")
}

// start runs the plugin on a loopback port and returns a hub-side sink for it.
func start(t *testing.T, o Options) sink.Sink {
	t.Helper()
	o.Logger = slog.New(slog.DiscardHandler)
	p, err := NewPlugin(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	sinkv1.RegisterSinkPluginServiceServer(srv, p)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })

	r := sink.NewRegistry()
	if err := plugin.Register(r); err != nil {
		t.Fatal(err)
	}
	k, _ := r.Lookup("plugin")
	s, err := k.Factory(&confighubv1.Sink{Name: "hook", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: ln.Addr().String()}}}, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.(sink.Closer).Close() })
	return s
}

func cfg(t *testing.T, gen uint64, raw string) *config.Config {
	t.Helper()
	ch, err := config.Check([]byte(raw), config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	return config.New("default", gen, config.Hash([]byte(raw)), ch.Format, []byte(raw), nil, nil, time.Unix(0, 0))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestForwardsSignedConfig(t *testing.T) {
	h := &hook{}
	ts := httptest.NewServer(h)
	defer ts.Close()
	secret := []byte("s3cret")
	s := start(t, Options{URL: ts.URL, Secret: secret, Headers: map[string]string{"Authorization": "Bearer tok"}})
	for _, raw := range []string{`{"_format_version":"3.0","services":[]}`, "_format_version: \"3.0\"\nservices: []\n"} {
		c := cfg(t, 5, raw)
		if err := s.Apply(ctxT(t), c); err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		body, hdr := h.bodies[len(h.bodies)-1], h.headers[len(h.headers)-1]
		h.mu.Unlock()
		if string(body) != raw {
			t.Fatalf("webhook got %q, want the bytes as pushed %q", body, raw)
		}
		if !hmac.Equal([]byte(hdr.Get(SignatureHeader)), []byte(Sign(secret, body))) {
			t.Fatalf("signature %q does not match the body", hdr.Get(SignatureHeader))
		}
		if !strings.HasPrefix(hdr.Get(SignatureHeader), "sha256=") || len(hdr.Get(SignatureHeader)) != len("sha256=")+64 {
			t.Fatalf("signature header shape %q", hdr.Get(SignatureHeader))
		}
		wantCT := "application/json"
		if c.Format == config.FormatYAML {
			wantCT = "application/yaml"
		}
		if hdr.Get("Content-Type") != wantCT || hdr.Get("Authorization") != "Bearer tok" ||
			hdr.Get("X-Confighub-Generation") != "5" || hdr.Get("X-Confighub-Hash") != c.Hash || hdr.Get("X-Confighub-Sink") != "hook" {
			t.Fatalf("headers %v", hdr)
		}
	}
}

func TestSignKnownVector(t *testing.T) {
	// RFC 4231 test case 2.
	got := Sign([]byte("Jefe"), []byte("what do ya want for nothing?"))
	if got != "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
		t.Fatal(got)
	}
}

func TestMapsWebhookAnswers(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retry     string
		code      sink.Code
		own       string // the plugin's own code, kept in the message
		permanent bool
		after     time.Duration
	}{
		{400, "", sink.CodeRejected, "", true, 0},
		{404, "", sink.CodeRejected, "", true, 0},
		{429, "7", sink.CodeRateLimited, "", false, 7 * time.Second},
		{500, "", sink.CodeUnavailable, `plugin code "webhook-500"`, false, 0},
		{503, "", sink.CodeUnavailable, `plugin code "webhook-503"`, false, 0},
	} {
		h := &hook{status: tc.status, retry: tc.retry}
		ts := httptest.NewServer(h)
		s := start(t, Options{URL: ts.URL})
		e, ok := sink.AsError(s.Apply(ctxT(t), cfg(t, 1, `{"_format_version":"3.0"}`)))
		ts.Close()
		if !ok {
			t.Fatalf("%d: want an error", tc.status)
		}
		if e.Code != tc.code || e.Permanent != tc.permanent || e.RetryAfter != tc.after || !strings.Contains(e.Message, "hook says hi") ||
			!strings.Contains(e.Message, tc.own) {
			t.Fatalf("%d: got %+v", tc.status, e)
		}
	}
}

func TestWebhookDownIsRetryable(t *testing.T) {
	ts := httptest.NewServer(&hook{})
	url := ts.URL
	ts.Close()
	s := start(t, Options{URL: url})
	e, ok := sink.AsError(s.Apply(ctxT(t), cfg(t, 1, `{"_format_version":"3.0"}`)))
	if !ok || e.Permanent || e.Code != "unavailable" {
		t.Fatalf("want retryable unavailable, got %+v", e)
	}
}

func TestParseRetryAfterDate(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	d, ok := parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now)
	if !ok || d != 90*time.Second {
		t.Fatalf("got %v %v", d, ok)
	}
	if _, ok := parseRetryAfter("soon", now); ok {
		t.Fatal("garbage must not parse")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	env := func(string) string { return "" }
	log := slog.New(slog.DiscardHandler)
	for _, args := range [][]string{
		{},                   // no URL
		{"--url", "ftp://x"}, // not http
		{"--url", "http://x", "--header", "novalue"},
		{"--url", "http://x", "--hmac-secret", "a", "--hmac-secret-file", "/etc/hostname"},
		{"--url", "http://x", "--hmac-secret-file", "/no/such/file"},
	} {
		if err := run(args, env, log); err == nil {
			t.Errorf("%v: want an error", args)
		}
	}
}
