package kong

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
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startGW(t *testing.T, opts ...kongemu.Option) (*kongemu.Gateway, string) {
	t.Helper()
	g := kongemu.New(opts...)
	u, err := g.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, u
}

func newSink(t *testing.T, ks *confighubv1.KongSpec, deps sink.Deps) *Sink {
	t.Helper()
	s, err := New(&confighubv1.Sink{Name: "gw", Spec: &confighubv1.Sink_Kong{Kong: ks}}, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.(*Sink).Close() })
	return s.(*Sink)
}

var gen uint64

func cfgOf(t testing.TB, raw []byte) *config.Config {
	t.Helper()
	ch, err := config.Check(raw, config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	gen++
	return config.New("default", gen, config.Hash(raw), ch.Format, raw, ch.JSON, nil, time.Now())
}

func fixture(t testing.TB, name string) []byte { return harness.Fixture(t, name) }

func sinkErr(t *testing.T, err error) *sink.Error {
	t.Helper()
	se, ok := sink.AsError(err)
	if !ok {
		t.Fatalf("want a *sink.Error, got %T %v", err, err)
	}
	return se
}

func TestRegisterAndCapabilities(t *testing.T) {
	r := sink.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	k, ok := r.Lookup("kong")
	if !ok {
		t.Fatal("kind kong not registered")
	}
	s, err := k.Factory(&confighubv1.Sink{Name: "a", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "http://127.0.0.1:1"}}}, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(*Sink).Close()
	if c := s.Describe(); !c.Gateway {
		t.Fatalf("capabilities %+v", c)
	}
}

func TestFactoryRejectsBadSpecs(t *testing.T) {
	for name, spec := range map[string]*confighubv1.Sink{
		"no spec":     {Name: "a", Kind: "kong"},
		"bad address": {Name: "a", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "ftp://x"}}},
		"no host":     {Name: "a", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "http://"}}},
		"missing CA file": {Name: "a", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "https://h",
			Tls: &confighubv1.TLS{CaFile: "/nonexistent/ca.pem"}}}},
		"bad header": {Name: "a", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: "http://h",
			Headers: map[string]string{"Bad Header": "x"}}}},
	} {
		if _, err := New(spec, sink.Deps{}); !errors.Is(err, sink.ErrInvalidSpec) {
			t.Errorf("%s: want ErrInvalidSpec, got %v", name, err)
		}
	}
}

func TestApply201Then304(t *testing.T) {
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	raw := fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	cfg := cfgOf(t, raw)
	ctx := context.Background()
	if err := s.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if g.Hash() != kongemu.ConfigHash(raw) {
		t.Fatalf("gateway hash %s, want %s", g.Hash(), kongemu.ConfigHash(raw))
	}
	if err := s.Apply(ctx, cfg); err != nil {
		t.Fatalf("304 must be success: %v", err)
	}
	reqs := g.Requests()
	if g.Loads() != 1 || len(reqs) != 2 || reqs[1].Status != http.StatusNotModified {
		t.Fatalf("loads %d, requests %+v", g.Loads(), reqs)
	}
	if q := reqs[0].Query; !strings.Contains(q, "check_hash=1") || !strings.Contains(q, "flatten_errors=1") {
		t.Fatalf("query %q", q)
	}
}

// TestApply400EntityErrorsWithTags: errors Kong flattens (an unknown
// plugin config field, a duplicate name) come back as entity errors with
// the entity's tags; the gateway keeps its configuration.
func TestApply400EntityErrorsWithTags(t *testing.T) {
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	good := cfgOf(t, fixture(t, "httproute-example__default.yaml"))
	if err := s.Apply(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	before := g.Hash()
	bad := []byte(`_format_version: "3.0"
services:
- name: default.echo.80
  host: echo.default.80.svc
  plugins:
  - name: correlation-id
    config: {header_name: X-Id, colour: red}
    tags: ["k8s-name:bad-plugin", "k8s-namespace:default", "k8s-kind:KongPlugin"]
- name: default.echo.80
  host: echo2.default.80.svc
  tags: ["k8s-name:echo2", "k8s-namespace:default", "k8s-kind:Service"]
`)
	err := s.Apply(context.Background(), cfgOf(t, bad))
	se := sinkErr(t, err)
	if !se.Permanent || se.Code != "rejected" || len(se.Body) == 0 {
		t.Fatalf("error %+v", se)
	}
	got := map[string]string{}
	for _, ee := range se.EntityErrors {
		if len(ee.Errors) != 1 {
			t.Fatalf("entity error %v", ee)
		}
		got[ee.EntityType+" "+strings.Join(ee.EntityTags, ",")] = ee.Errors[0].Field + ": " + ee.Errors[0].Message
	}
	want := map[string]string{
		"plugin k8s-name:bad-plugin,k8s-namespace:default,k8s-kind:KongPlugin": "config.colour: unknown field",
		"service k8s-name:echo2,k8s-namespace:default,k8s-kind:Service":        ": uniqueness violation: 'services' entity with name set to 'default.echo.80' already declared",
	}
	if len(got) != len(want) || got["plugin k8s-name:bad-plugin,k8s-namespace:default,k8s-kind:KongPlugin"] != want["plugin k8s-name:bad-plugin,k8s-namespace:default,k8s-kind:KongPlugin"] ||
		got["service k8s-name:echo2,k8s-namespace:default,k8s-kind:Service"] != want["service k8s-name:echo2,k8s-namespace:default,k8s-kind:Service"] {
		t.Fatalf("entity errors %v, want %v", got, want)
	}
	if g.Hash() != before {
		t.Fatal("the gateway left its previous config")
	}
}

// TestApply400DanglingReferences: Kong 3.9.1 keys reference errors by the
// entity's name or id, which its flattening cannot place: for a
// collection given as a top-level list (a route naming a missing service)
// the answer holds no entity error at all (fields {}, flattened_errors
// {}), so the apply is a permanent rejection with Kong's message only; for
// a collection given only nested (a plugin naming a missing consumer) the
// error stays in fields and is reported by the entity's id, without tags.
func TestApply400DanglingReferences(t *testing.T) {
	_, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	top := []byte(`_format_version: "3.0"
services:
- name: default.echo.80
  host: echo.default.80.svc
routes:
- name: default.broken.0
  service: default.missing.80
  paths: ["/broken"]
  tags: ["k8s-name:broken", "k8s-namespace:default", "k8s-kind:HTTPRoute"]
`)
	se := sinkErr(t, s.Apply(context.Background(), cfgOf(t, top)))
	if !se.Permanent || se.Code != "rejected" || len(se.EntityErrors) != 0 ||
		!strings.Contains(se.Message, "declarative config is invalid: {}") {
		t.Fatalf("top-level dangling reference: %+v", se)
	}
	nested := []byte(`_format_version: "3.0"
services:
- name: default.echo.80
  host: echo.default.80.svc
  plugins:
  - name: cors
    id: 5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a12
    consumer: ghost
`)
	se = sinkErr(t, s.Apply(context.Background(), cfgOf(t, nested)))
	if len(se.EntityErrors) != 1 || se.EntityErrors[0].EntityType != "plugin" ||
		se.EntityErrors[0].EntityId != "5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a12" ||
		se.EntityErrors[0].Errors[0].Message != "invalid reference 'consumer: ghost' (no such entry in 'consumers')" {
		t.Fatalf("nested dangling reference: %+v", se)
	}
}

func TestApply413TooLarge(t *testing.T) {
	_, u := startGW(t, kongemu.WithBodyLimit(100))
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	cfg := cfgOf(t, fixture(t, "httproute-example__default.yaml"))
	js, _ := cfg.JSON()
	se := sinkErr(t, s.Apply(context.Background(), cfg))
	if !se.Permanent || se.Code != "too-large" || !strings.Contains(se.Message, "too large") ||
		!strings.Contains(se.Message, strings.TrimSpace(itoa(len(js)))+" bytes") {
		t.Fatalf("error %+v", se)
	}
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

func TestApply429RetryAfter(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{Clock: clk})
	cfg := cfgOf(t, []byte(`{"_format_version":"3.0"}`))
	g.ScriptConfig(
		kongemu.Step{Status: 429, RetryAfter: "7"},
		kongemu.Step{Status: 429, RetryAfter: clk.Now().Add(90 * time.Second).Format(http.TimeFormat)},
		kongemu.Step{Status: 429},
	)
	for _, want := range []time.Duration{7 * time.Second, 90 * time.Second, 0} {
		se := sinkErr(t, s.Apply(context.Background(), cfg))
		if se.Code != "rate-limited" || se.Permanent || se.RetryAfter != want {
			t.Fatalf("want rate-limited after %v, got %+v", want, se)
		}
	}
	if err := s.Apply(context.Background(), cfg); err != nil {
		t.Fatalf("after the script: %v", err)
	}
}

func TestApply5xxAndDropsAreRetryable(t *testing.T) {
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	cfg := cfgOf(t, []byte(`{"_format_version":"3.0"}`))
	g.ScriptConfig(kongemu.Step{Status: 503}, kongemu.Step{Status: 500}, kongemu.Step{Status: 504}, kongemu.Step{Drop: true})
	for _, want := range []sink.Code{sink.CodeUnavailable, sink.CodeUnavailable, sink.CodeTimeout, sink.CodeUnavailable} {
		se := sinkErr(t, s.Apply(context.Background(), cfg))
		if se.Code != want || se.Permanent || se.RetryAfter != 0 {
			t.Fatalf("want retryable %s, got %+v", want, se)
		}
	}
	if err := s.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

func TestApplyConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	ln.Close()
	s := newSink(t, &confighubv1.KongSpec{Address: addr}, sink.Deps{})
	se := sinkErr(t, s.Apply(context.Background(), cfgOf(t, []byte(`{"_format_version":"3.0"}`))))
	if se.Code != "unavailable" || se.Permanent {
		t.Fatalf("%+v", se)
	}
}

func TestApplyTimeoutOnHungGateway(t *testing.T) {
	g, u := startGW(t)
	g.Hang()
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	se := sinkErr(t, s.Apply(ctx, cfgOf(t, []byte(`{"_format_version":"3.0"}`))))
	if se.Code != "timeout" || se.Permanent {
		t.Fatalf("%+v", se)
	}
	g.Release()
}

func TestHeadersSent(t *testing.T) {
	g := kongemu.New()
	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("Kong-Admin-Token"))
		mu.Unlock()
		g.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := newSink(t, &confighubv1.KongSpec{Address: srv.URL, Headers: map[string]string{"Kong-Admin-Token": "s3cret"}}, sink.Deps{})
	if err := s.Apply(context.Background(), cfgOf(t, []byte(`{"_format_version":"3.0"}`))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) != 1 || tokens[0] != "s3cret" {
		t.Fatalf("tokens %q", tokens)
	}
}

// --- TLS -------------------------------------------------------------------

type pki struct {
	caPEM, serverCert, serverKey, clientCert, clientKey []byte
}

func newPKI(t *testing.T) pki {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	encKey := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b})
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: []string{cn}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), encKey(k)
	}
	p := pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	p.serverCert, p.serverKey = leaf(2, "kong.test", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "confighub", x509.ExtKeyUsageClientAuth)
	return p
}

func TestTLSWithCAAndClientCertificate(t *testing.T) {
	p := newPKI(t)
	srvCert, err := tls.X509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	g, u := startGW(t, kongemu.WithTLS(&tls.Config{
		Certificates: []tls.Certificate{srvCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS12,
	}))
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, p.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := cfgOf(t, []byte(`{"_format_version":"3.0"}`))

	ok := newSink(t, &confighubv1.KongSpec{Address: u, Tls: &confighubv1.TLS{
		CaFile: caFile, CertPem: string(p.clientCert), KeyPem: string(p.clientKey), ServerName: "kong.test"}}, sink.Deps{})
	if err := ok.Apply(context.Background(), cfg); err != nil {
		t.Fatalf("mTLS apply: %v", err)
	}
	if g.Loads() != 1 {
		t.Fatal("not loaded")
	}

	noCert := newSink(t, &confighubv1.KongSpec{Address: u, Tls: &confighubv1.TLS{CaPem: string(p.caPEM), ServerName: "kong.test"}}, sink.Deps{})
	if se := sinkErr(t, noCert.Apply(context.Background(), cfg)); se.Code != "unavailable" {
		t.Fatalf("without a client certificate: %+v", se)
	}
	noCA := newSink(t, &confighubv1.KongSpec{Address: u, Tls: &confighubv1.TLS{
		CertPem: string(p.clientCert), KeyPem: string(p.clientKey), ServerName: "kong.test"}}, sink.Deps{})
	if se := sinkErr(t, noCA.Apply(context.Background(), cfg)); !strings.Contains(se.Message, "certificate") {
		t.Fatalf("without the CA: %+v", se)
	}
	if g.Loads() != 1 {
		t.Fatal("a refused TLS client reached the Admin API")
	}
}

func TestInsecureSkipVerifyWarns(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	logger := slogTo(&buf, &mu)
	_ = newSink(t, &confighubv1.KongSpec{Address: "https://127.0.0.1:1", Tls: &confighubv1.TLS{InsecureSkipVerify: true}}, sink.Deps{Logger: logger})
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "insecure_skip_verify") || !strings.Contains(buf.String(), "WARN") {
		t.Fatalf("log %q", buf.String())
	}
}

// --- status poll -------------------------------------------------------------

type events struct{ ch chan string }

func (e *events) Resync(reason string)                   { e.ch <- "resync: " + reason }
func (e *events) DataPlane(*confighubv1.DataPlaneStatus) {}
func (e *events) Health(err error) {
	if err == nil {
		e.ch <- "healthy"
		return
	}
	e.ch <- "unhealthy"
}

func (e *events) next(t *testing.T) string {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no notifier event")
		return ""
	}
}

func TestStatusPollResyncAndHealth(t *testing.T) {
	clk := clockwork.NewFakeClock()
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u, StatusInterval: durationpb.New(5 * time.Second)}, sink.Deps{Clock: clk})
	ev := &events{ch: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, ev) }()
	defer func() { cancel(); <-done }()

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	polls := 0
	tick := func() {
		t.Helper()
		if err := clk.BlockUntilContext(wctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Second)
		polls++
	}
	waitPolls := func() {
		t.Helper()
		if err := g.Wait(wctx, func(kongemu.View) bool { return g.Count("GET", "/status") >= polls }); err != nil {
			t.Fatal(err)
		}
	}

	// First poll: reachable, and an empty gateway at hub start is refilled.
	tick()
	if e := ev.next(t); e != "healthy" {
		t.Fatalf("got %q", e)
	}
	if e := ev.next(t); e != "resync: gateway restarted empty" {
		t.Fatalf("got %q", e)
	}
	// Applied: polls see the hash, nothing to report.
	if err := s.Apply(context.Background(), cfgOf(t, []byte(`{"_format_version":"3.0","services":[{"name":"a","host":"h"}]}`))); err != nil {
		t.Fatal(err)
	}
	tick()
	waitPolls()
	// The gateway restarts empty: resync.
	g.Restart()
	tick()
	if e := ev.next(t); e != "resync: gateway restarted empty" {
		t.Fatalf("got %q", e)
	}
	// Still empty and nothing applied since: no second resync. Then it
	// becomes unreachable, then reachable again.
	tick()
	waitPolls()
	g.DropNext(-1)
	tick()
	if e := ev.next(t); e != "unhealthy" {
		t.Fatalf("got %q", e)
	}
	// Still down: reported again (the engine may have cleared it after a
	// successful apply in between).
	tick()
	if e := ev.next(t); e != "unhealthy" {
		t.Fatalf("got %q", e)
	}
	g.ClearFaults()
	tick()
	if e := ev.next(t); e != "healthy" {
		t.Fatalf("got %q", e)
	}
}

func TestEveryFixtureApplies(t *testing.T) {
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	for _, f := range harness.Fixtures(t) {
		raw, _ := os.ReadFile(f)
		if err := s.Apply(context.Background(), cfgOf(t, raw)); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if g.Hash() != kongemu.ConfigHash(raw) {
			t.Errorf("%s: hash", filepath.Base(f))
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func slogTo(b *strings.Builder, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu: mu, b: b}, nil))
}

// A gateway with a database refuses /config: a rejection naming the reason.
func TestApplyToDBModeGatewayIsRejected(t *testing.T) {
	_, u := startGW(t, kongemu.WithDBMode())
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	se := sinkErr(t, s.Apply(context.Background(), cfgOf(t, []byte(`{"_format_version":"3.0"}`))))
	if !se.Permanent || se.Code != "rejected" || len(se.EntityErrors) != 0 ||
		!strings.Contains(se.Message, "not use a database") {
		t.Fatalf("%+v", se)
	}
}

// 401/403 are the credentials' fault, not the configuration's: retried.
func TestApplyUnauthorizedIsRetryable(t *testing.T) {
	g, u := startGW(t)
	g.ScriptConfig(kongemu.Step{Status: http.StatusUnauthorized, Body: `{"message":"Invalid credentials. Token or User credentials required"}`})
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	se := sinkErr(t, s.Apply(context.Background(), cfgOf(t, []byte(`{"_format_version":"3.0"}`))))
	if se.Permanent || se.Code != "unauthorized" || !strings.Contains(se.Message, "Invalid credentials") {
		t.Fatalf("%+v", se)
	}
}

// TestKeyAuthKeyNeverNamed: Kong names a key-auth credential by its key in
// flattened errors; status gets its id and tags, never the key.
func TestKeyAuthKeyNeverNamed(t *testing.T) {
	raw := []byte(`{"code":14,"message":"declarative config is invalid","flattened_errors":[` +
		`{"entity_type":"keyauth_credentials","entity_name":"s3cr3t-key-value","entity_id":"c0ffee00-0000-4000-8000-000000000001",` +
		`"entity_tags":["k8s-name:alice"],"errors":[{"type":"field","field":"ttl","message":"expected an integer"}]},` +
		`{"entity_type":"route","entity_name":"r1","errors":[{"type":"entity","message":"bad"}]}]}`)
	ents, _ := ParseFlattenedErrors(raw)
	if len(ents) != 2 {
		t.Fatalf("entity errors %v", ents)
	}
	if k := ents[0]; k.GetEntityName() != "" || k.GetEntityId() == "" || len(k.GetEntityTags()) != 1 {
		t.Errorf("key-auth credential shown as %v: want no name, its id and tags", k)
	}
	if ents[1].GetEntityName() != "r1" {
		t.Errorf("a route keeps its name: %v", ents[1])
	}
}

// A sink keeps one idle connection to its gateway: after an apply and a
// status poll overlapped (two connections), the second is closed, and the
// next request reuses the one kept. 1,000 sinks otherwise held 1,306.
func TestOneIdleConnectionPerGateway(t *testing.T) {
	applying, polled := make(chan struct{}), make(chan struct{})
	closed := make(chan struct{}, 4)
	var mu sync.Mutex
	opened := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/config":
			close(applying)
			<-polled // answer only once the poll has its own connection
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
		case "/status":
			_, _ = w.Write([]byte(`{"configuration_hash":"0123456789abcdef0123456789abcdef"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			mu.Lock()
			opened++
			mu.Unlock()
		case http.StateClosed:
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	s := newSink(t, &confighubv1.KongSpec{Address: srv.URL}, sink.Deps{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	applied := make(chan error, 1)
	go func() { applied <- s.Apply(ctx, cfgOf(t, []byte(`{"_format_version":"3.0"}`))) }()
	<-applying
	if _, err := s.status(ctx); err != nil {
		t.Fatal(err)
	}
	close(polled)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("both connections kept idle after the overlap")
	}
	if _, err := s.status(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if opened != 2 {
		t.Fatalf("connections opened: %d, want 2 (the overlap's two, then the kept one reused)", opened)
	}
}
