package auth_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/test/authtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a gRPC server whose confighub services are unimplemented:
// a call that passes auth gets Unimplemented, one that does not gets the
// auth error.
func serve(t *testing.T, a *auth.Authenticator, so ...grpc.ServerOption) string {
	t.Helper()
	so = append(so, grpc.ChainUnaryInterceptor(a.UnaryInterceptor()), grpc.ChainStreamInterceptor(a.StreamInterceptor()))
	gs := grpc.NewServer(so...)
	confighubv1.RegisterConfigHubServiceServer(gs, confighubv1.UnimplementedConfigHubServiceServer{})
	confighubv1.RegisterSinkAdminServiceServer(gs, confighubv1.UnimplementedSinkAdminServiceServer{})
	healthpb.RegisterHealthServer(gs, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func withToken(tok string) context.Context {
	ctx := context.Background()
	if tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	return ctx
}

const tokensYAML = `
tokens:
  - name: viewer
    token: read-token-0123456789
    role: read
  - name: controller
    token: push-token-0123456789
    role: push
  - name: operator
    token: admin-token-0123456789
    role: admin
`

func mustTokens(t *testing.T, s string) *auth.Tokens {
	t.Helper()
	tk, err := auth.ParseTokens([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestRoles: every RPC needs its role; missing and unknown tokens are
// Unauthenticated, a too-low role is PermissionDenied; health is open.
func TestRoles(t *testing.T) {
	addr := serve(t, auth.New(mustTokens(t, tokensYAML)))
	cc := dial(t, addr, nil)
	hubc := confighubv1.NewConfigHubServiceClient(cc)
	admin := confighubv1.NewSinkAdminServiceClient(cc)

	calls := map[string]func(ctx context.Context) error{
		"GetConfig": func(ctx context.Context) error {
			_, err := hubc.GetConfig(ctx, &confighubv1.GetConfigRequest{})
			return err
		},
		"GetStatus": func(ctx context.Context) error {
			_, err := hubc.GetStatus(ctx, &confighubv1.GetStatusRequest{})
			return err
		},
		"WatchStatus": func(ctx context.Context) error {
			st, err := hubc.WatchStatus(ctx, &confighubv1.WatchStatusRequest{})
			if err != nil {
				return err
			}
			_, err = st.Recv()
			return err
		},
		"ListSinks": func(ctx context.Context) error {
			_, err := admin.ListSinks(ctx, &confighubv1.ListSinksRequest{})
			return err
		},
		"PushConfig": func(ctx context.Context) error {
			_, err := hubc.PushConfig(ctx, &confighubv1.PushConfigRequest{})
			return err
		},
		"UploadConfig": func(ctx context.Context) error {
			st, err := hubc.UploadConfig(ctx)
			if err != nil {
				return err
			}
			_, err = st.CloseAndRecv()
			return err
		},
		"ListGenerations": func(ctx context.Context) error {
			_, err := hubc.ListGenerations(ctx, &confighubv1.ListGenerationsRequest{})
			return err
		},
		"DiffConfig": func(ctx context.Context) error {
			_, err := hubc.DiffConfig(ctx, &confighubv1.DiffConfigRequest{})
			return err
		},
		"RollbackConfig": func(ctx context.Context) error {
			_, err := hubc.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{})
			return err
		},
		"PutSink": func(ctx context.Context) error {
			_, err := admin.PutSink(ctx, &confighubv1.PutSinkRequest{})
			return err
		},
		"DeleteSink": func(ctx context.Context) error {
			_, err := admin.DeleteSink(ctx, &confighubv1.DeleteSinkRequest{})
			return err
		},
	}
	need := map[string]int{"GetConfig": 1, "GetStatus": 1, "WatchStatus": 1, "ListSinks": 1, "ListGenerations": 1, "DiffConfig": 1, "PushConfig": 2, "RollbackConfig": 2, "UploadConfig": 2, "PutSink": 3, "DeleteSink": 3}
	tokens := []struct {
		tok   string
		level int
	}{{"", -1}, {"not-a-known-token", -1}, {"read-token-0123456789", 1}, {"push-token-0123456789", 2}, {"admin-token-0123456789", 3}}
	for name, call := range calls {
		for _, tk := range tokens {
			err := call(withToken(tk.tok))
			var want codes.Code
			switch {
			case tk.level < 0:
				want = codes.Unauthenticated
			case tk.level < need[name]:
				want = codes.PermissionDenied
			default:
				want = codes.Unimplemented // passed auth, reached the handler
			}
			if got := status.Code(err); got != want {
				t.Errorf("%s with token %q: got %v (%v), want %v", name, tk.tok, got, err, want)
			}
			if err != nil && strings.Contains(err.Error(), tk.tok) && tk.tok != "" {
				t.Errorf("%s: the error shows the token: %v", name, err)
			}
		}
	}
	if _, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health without a token: %v", err)
	}
}

func TestBadScheme(t *testing.T) {
	addr := serve(t, auth.New(mustTokens(t, tokensYAML)))
	cc := dial(t, addr, nil)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic read-token-0123456789")
	_, err := confighubv1.NewConfigHubServiceClient(cc).GetStatus(ctx, &confighubv1.GetStatusRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Basic scheme: got %v, want Unauthenticated", err)
	}
}

func TestUnknownMethodNeedsAdmin(t *testing.T) {
	if auth.Required("/confighub.v1.ConfigHubService/SomethingNew") != auth.RoleAdmin {
		t.Fatal("a method missing from the policy must need admin")
	}
	if auth.Required("/grpc.health.v1.Health/Watch") != auth.RoleNone || auth.Required("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo") != auth.RoleNone {
		t.Fatal("health and reflection must stay open")
	}
}

func TestParseForms(t *testing.T) {
	forms := map[string]string{
		"named":   tokensYAML,
		"mapping": "read-token-0123456789: read\npush-token-0123456789: push\nadmin-token-0123456789: admin\n",
		"lines":   "# token role\nread-token-0123456789 read\n\npush-token-0123456789   push # the controller\nadmin-token-0123456789\tadmin\n",
	}
	for name, body := range forms {
		tk, err := auth.ParseTokens([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for tok, want := range map[string]auth.Role{"read-token-0123456789": auth.RoleRead, "push-token-0123456789": auth.RolePush, "admin-token-0123456789": auth.RoleAdmin, "read-token-012345678": auth.RoleNone, "read-token-01234567890": auth.RoleNone, "": auth.RoleNone} {
			if got, _ := tk.Lookup(tok); got != want {
				t.Errorf("%s: Lookup(%q) = %v, want %v", name, tok, got, want)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]struct{ body, msg string }{
		"empty":        {"", "no token"},
		"comments":     {"# nothing\n", "no token"},
		"bad role":     {"abc superuser\n", "line 1: unknown role: want read, push or admin"},
		"swapped":      {"read abcdef0123\n", "line 1: unknown role"},
		"yaml swapped": {"read: abcdef0123\n", "line 1: unknown role"},
		"yaml bare":    {"tokens:\n  - abcdef0123\n", "tokens list: want entries {name, token, role} (line 2)"},
		"three fields": {"abc read extra\n", "line 1: want \"TOKEN ROLE\""},
		"duplicate":    {"abc read\nabc push\n", "line 2: the same token as line 1"},
		"yaml role":    {"tokens:\n  - name: x\n    token: abc\n    role: root\n", "tokens[0] (x): unknown role"},
		"yaml empty":   {"tokens:\n  - name: x\n    role: read\n", "empty token"},
	}
	for name, c := range cases {
		_, err := auth.ParseTokens([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error with %q", name, err, c.msg)
		}
		if err != nil && strings.Contains(err.Error(), "abc") {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}
}

// TestReload: a good file replaces the tokens; a bad one keeps them and
// logs why.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("old-token read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a, err := auth.NewFromFile(path, auth.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, a)
	c := confighubv1.NewConfigHubServiceClient(dial(t, addr, nil))
	get := func(tok string) codes.Code {
		_, err := c.GetStatus(withToken(tok), &confighubv1.GetStatusRequest{})
		return status.Code(err)
	}
	if get("old-token") != codes.Unimplemented || get("new-token") != codes.Unauthenticated {
		t.Fatal("before reload: old-token must pass and new-token must not")
	}
	if err := os.WriteFile(path, []byte("new-token read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if get("old-token") != codes.Unauthenticated || get("new-token") != codes.Unimplemented {
		t.Fatal("after reload: new-token must pass and old-token must not")
	}
	if !strings.Contains(logs.String(), "auth tokens reloaded") {
		t.Errorf("no reload log line:\n%s", logs.String())
	}
	if err := os.WriteFile(path, []byte("broken-token wizard\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err == nil {
		t.Fatal("a bad file must fail the reload")
	}
	if get("new-token") != codes.Unimplemented {
		t.Fatal("a failed reload must keep the tokens in force")
	}
	if !strings.Contains(logs.String(), "keeping the previous tokens") || !strings.Contains(logs.String(), "unknown role") {
		t.Errorf("the failed reload is not logged with its reason:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "new-token") || strings.Contains(logs.String(), "broken-token") {
		t.Errorf("a token appears in the logs:\n%s", logs.String())
	}
}

// TestMTLS: with a client CA a client without a certificate fails the
// handshake and one with a certificate from the CA passes.
func TestMTLS(t *testing.T) {
	ca := authtest.NewCA(t, "test")
	srvPair := ca.Server(t, "hub", "127.0.0.1", "localhost")
	cli := ca.Client(t, "controller")
	st, err := auth.NewServerTLS(srvPair.CertFile, srvPair.KeyFile, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, auth.New(mustTokens(t, tokensYAML)), grpc.Creds(credentials.NewTLS(st.Config())))
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)

	noCert := dial(t, addr, credentials.NewTLS(&tls.Config{RootCAs: pool}))
	if _, err := healthpb.NewHealthClient(noCert).Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("without a client certificate: got %v, want a failed handshake (Unavailable)", err)
	}
	pair, err := tls.LoadX509KeyPair(cli.CertFile, cli.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	withCert := dial(t, addr, credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}))
	if _, err := healthpb.NewHealthClient(withCert).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	_, err = confighubv1.NewConfigHubServiceClient(withCert).GetStatus(withToken("read-token-0123456789"), &confighubv1.GetStatusRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("token over mTLS: %v", err)
	}
}

func BenchmarkLookup(b *testing.B) {
	var sb strings.Builder
	for i := range 100 {
		sb.WriteString("token-")
		sb.WriteString(strings.Repeat("x", i))
		sb.WriteString(" read\n")
	}
	tk, err := auth.ParseTokens([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		tk.Lookup("token-xxxxxxxxxx")
	}
}

// TestServerTLSReload: Reload picks up a new certificate; a broken pair
// keeps the old one.
func TestServerTLSReload(t *testing.T) {
	ca := authtest.NewCA(t, "reload")
	first := ca.Server(t, "first", "127.0.0.1")
	second := ca.Server(t, "second", "127.0.0.1")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cp := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cp(first.CertFile, certFile)
	cp(first.KeyFile, keyFile)
	st, err := auth.NewServerTLS(certFile, keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string {
		c, err := st.Config().GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.Subject.CommonName
	}
	if cn() != "first" {
		t.Fatal("initial certificate")
	}
	cp(second.CertFile, certFile)
	cp(second.KeyFile, keyFile)
	if err := st.Reload(); err != nil || cn() != "second" {
		t.Fatalf("after reload: %v %s", err, cn())
	}
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Reload(); err == nil || cn() != "second" {
		t.Fatalf("a broken pair must fail and keep the old certificate: %v %s", err, cn())
	}
	if _, err := auth.NewServerTLS(certFile, "", ""); err == nil {
		t.Fatal("--tls-cert without --tls-key must fail")
	}
}

// TestCheck: the HTTP side's check (the status page) follows the same
// roles: unknown or no token is ErrUnknownToken, a role below the one
// needed is ErrPermissionDenied, a higher role passes; no error quotes the
// token.
func TestCheck(t *testing.T) {
	tk, err := auth.ParseTokens([]byte("tok-read read\ntok-admin admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(tk)
	for _, c := range []struct {
		token string
		need  auth.Role
		want  error
	}{
		{"", auth.RoleRead, auth.ErrUnknownToken},
		{"nope", auth.RoleRead, auth.ErrUnknownToken},
		{"tok-read", auth.RoleRead, nil},
		{"tok-read", auth.RolePush, auth.ErrPermissionDenied},
		{"tok-admin", auth.RoleRead, nil},
	} {
		p, err := a.Check(c.token, c.need)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("Check(%q, %s) = %v, want %v", c.token, c.need, err, c.want)
		}
		if err != nil && c.token != "" && strings.Contains(err.Error(), c.token) {
			t.Errorf("error %q quotes the token", err)
		}
		if err == nil && p.Role < c.need {
			t.Errorf("Check(%q) principal %+v", c.token, p)
		}
	}
}

// TestCheckRequest: the hub's HTTP endpoints (status page API, profiles)
// read the bearer token of the Authorization header (scheme in any case)
// and answer 401 with WWW-Authenticate for no or an unknown token, 403 for
// a role below the one needed; no error quotes the token.
func TestCheckRequest(t *testing.T) {
	tk, err := auth.ParseTokens([]byte("tok-read read\ntok-admin admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(tk)
	for _, c := range []struct {
		header string
		want   int
		err    error
	}{
		{"", http.StatusUnauthorized, auth.ErrNoToken},
		{"Bearer ", http.StatusUnauthorized, auth.ErrNoToken},
		{"Basic dG9rLWFkbWlu", http.StatusUnauthorized, auth.ErrNoToken},
		{"Bearer nope", http.StatusUnauthorized, auth.ErrUnknownToken},
		{"Bearer tok-read", http.StatusForbidden, auth.ErrPermissionDenied},
		{"Bearer tok-admin", http.StatusOK, nil},
		{"bearer tok-admin", http.StatusOK, nil},
	} {
		r := httptest.NewRequest(http.MethodGet, "/debug/pprof/heap", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		w := httptest.NewRecorder()
		p, code, err := a.CheckRequest(w, r, auth.RoleAdmin)
		if code != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%q: %d %v, want %d %v", c.header, code, err, c.want, c.err)
		}
		if got := w.Header().Get("WWW-Authenticate"); (code == http.StatusUnauthorized) != (got != "") {
			t.Errorf("%q: %d with WWW-Authenticate %q", c.header, code, got)
		}
		if err != nil && strings.Contains(err.Error(), "tok-") || err == nil && p.Role != auth.RoleAdmin {
			t.Errorf("%q: %v, principal %+v", c.header, err, p)
		}
	}
}
