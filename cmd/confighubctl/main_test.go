package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/file"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/authtest"
	"github.com/confighub/confighub/test/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rejectSink rejects every configuration the way a Kong gateway does, with
// a body that names a credential.
type rejectSink struct{}

func (rejectSink) Apply(context.Context, *config.Config) error {
	return &sink.Error{Code: "rejected", Message: "invalid declarative configuration", Permanent: true,
		Body: []byte(`{"flattened_errors":[{"entity_type":"basicauth_credential","entity":{"username":"u","password":"hunter2"},"errors":[{"type":"field","field":"consumer","message":"required"}]}]}`)}
}
func (rejectSink) Describe() sink.Capabilities { return sink.Capabilities{} }

type hubOpts struct {
	tokens  string
	tls     *auth.ServerTLS
	pageURL string
	maxMsg  int // the hub's --max-message-bytes; 0: its default
}

// startHub runs an in-process hub (engine, memory store, gRPC server with
// the redactor) on 127.0.0.1:0.
func startHub(t *testing.T, o hubOpts) string {
	t.Helper()
	h, opts, after := buildHub(t, o)
	return harness.ServeGRPC(t, newGRPC(t, h, opts).GRPC, after...)
}

func newGRPC(t *testing.T, h *hub.Hub, opts []server.Option) *server.Server {
	t.Helper()
	srv, err := server.New(h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// buildHub starts a hub as o says and returns it, the options of its gRPC
// server, and what stops it once its server stopped.
func buildHub(t *testing.T, o hubOpts) (*hub.Hub, []server.Option, []func()) {
	t.Helper()
	reg := sink.NewRegistry()
	// The tests' files are under their own t.TempDir(), all under the
	// system's temporary folder.
	if err := file.Register(reg, os.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("reject", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) { return rejectSink{}, nil }); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	eng := engine.New(reg, engine.WithRecorder(st))
	h := hub.New(st, hub.PortsOf(eng))
	if err := h.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	opts := []server.Option{server.WithRedactor(redact.Config)}
	if o.tokens != "" {
		tk, err := auth.ParseTokens([]byte(o.tokens))
		if err != nil {
			t.Fatal(err)
		}
		a := auth.New(tk)
		opts = append(opts, server.WithInterceptors([]grpc.UnaryServerInterceptor{a.UnaryInterceptor()}, []grpc.StreamServerInterceptor{a.StreamInterceptor()}))
	}
	if o.tls != nil {
		opts = append(opts, server.WithServerOptions(grpc.Creds(credentials.NewTLS(o.tls.Config()))))
	}
	if o.pageURL != "" {
		opts = append(opts, server.WithStatusPageURL(func() string { return o.pageURL }))
	}
	if o.maxMsg > 0 {
		opts = append(opts, server.WithMaxMessageBytes(o.maxMsg))
	}
	return h, opts, []func(){eng.Stop, func() { _ = st.Close() }}
}

// outageHub is an in-process hub whose gRPC server stops and starts again
// on the same address while the hub behind it runs on: an outage as a
// client sees it.
type outageHub struct {
	t    *testing.T
	hub  *hub.Hub
	opts []server.Option
	addr string
	srv  *grpc.Server
	done chan struct{}
}

func startOutageHub(t *testing.T) *outageHub {
	t.Helper()
	h, opts, after := buildHub(t, hubOpts{})
	t.Cleanup(func() {
		for _, f := range after {
			f()
		}
	})
	o := &outageHub{t: t, hub: h, opts: opts, addr: "127.0.0.1:0"}
	o.start()
	t.Cleanup(o.stop) // before the hub's own stop: cleanups run last first
	return o
}

// start serves the hub again, on the address it had.
func (o *outageHub) start() {
	o.t.Helper()
	lis, err := net.Listen("tcp", o.addr)
	if err != nil {
		o.t.Fatal(err)
	}
	o.addr = lis.Addr().String()
	o.srv, o.done = newGRPC(o.t, o.hub, o.opts).GRPC, make(chan struct{})
	go func(srv *grpc.Server, done chan struct{}) { defer close(done); _ = srv.Serve(lis) }(o.srv, o.done)
}

// stop stops serving and closes every connection; idempotent.
func (o *outageHub) stop() {
	if o.srv == nil {
		return
	}
	o.srv.Stop()
	<-o.done
	o.srv = nil
}

// ctl runs the CLI and returns its exit code, stdout and stderr.
func ctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runContext(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func mustCtl(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := ctl(t, args...)
	if code != 0 {
		t.Fatalf("confighubctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitStatus polls `status` until its table matches re.
func waitStatus(t *testing.T, re *regexp.Regexp, args ...string) string {
	t.Helper()
	var last string
	for range 500 {
		_, last, _ = ctl(t, append(args, "status")...)
		if re.MatchString(last) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("status never matched %s; last:\n%s", re, last)
	return ""
}

// TestTour: sinks put, push a KIC fixture, status until applied, sinks
// list, config get (redacted), config get --sink, delete.
func TestTour(t *testing.T) {
	addr := startHub(t, hubOpts{})
	out := filepath.Join(t.TempDir(), "kong.yaml")
	g := []string{"--addr", addr}
	res := mustCtl(t, append(g, "sinks", "put", "-f", writeFile(t, "sink.yaml", "name: out\nfile:\n  path: "+out+"\n"))...)
	if res != "sink out created\n" {
		t.Fatalf("sinks put: %q", res)
	}
	fx := harness.FixturePath(t, "credentials__default.yaml")
	raw := harness.Fixture(t, "credentials__default.yaml")
	res = mustCtl(t, append(g, "push", "-f", fx, "--label", "commit=abc")...)
	if !strings.HasPrefix(res, "accepted: stream default generation 1 (hash "+config.Hash(raw)[:12]) {
		t.Fatalf("push: %q", res)
	}
	table := waitStatus(t, regexp.MustCompile(`(?m)^out\s+file\s+APPLIED\s+1/1\s+1\s`), g...)
	if !strings.Contains(table, "stream default  generation 1") || !strings.Contains(table, "SINK  ") {
		t.Fatalf("status table:\n%s", table)
	}
	// Pushing the same bytes again changes nothing.
	if res := mustCtl(t, append(g, "push", "-f", fx)...); !strings.HasPrefix(res, "unchanged: stream default stays at generation 1") {
		t.Fatalf("second push: %q", res)
	}
	js := mustCtl(t, append(g, "--output", "json", "status")...)
	var parsed struct {
		Sinks []struct {
			Sink, State, AppliedGeneration string
		}
	}
	if err := json.Unmarshal([]byte(js), &parsed); err != nil || len(parsed.Sinks) != 1 || parsed.Sinks[0].AppliedGeneration != "1" || parsed.Sinks[0].State != "SINK_STATE_APPLIED" {
		t.Fatalf("status json: %v %+v\n%s", err, parsed, js)
	}
	list := mustCtl(t, append(g, "sinks", "list")...)
	if !regexp.MustCompile(`(?m)^out\s+file\s+default\s+` + regexp.QuoteMeta(out) + `$`).MatchString(list) {
		t.Fatalf("sinks list:\n%s", list)
	}
	_, cfg, summary := ctl(t, append(g, "config", "get")...)
	if strings.Contains(cfg, "consumer-1-password") || !strings.Contains(cfg, redact.Placeholder) || !strings.Contains(summary, "credentials redacted") {
		t.Fatalf("config get is not redacted:\n%s\n%s", summary, cfg)
	}
	if _, err := config.Check([]byte(cfg), config.FormatYAML); err != nil {
		t.Fatalf("config get: not a config: %v", err)
	}
	_, cfg, summary = ctl(t, append(g, "config", "get", "--sink", "out")...)
	if !strings.Contains(summary, "sink out (stream default) last applied: generation 1") || !strings.Contains(cfg, "_format_version") {
		t.Fatalf("config get --sink:\n%s\n%s", summary, cfg)
	}
	if res := mustCtl(t, append(g, "sinks", "delete", "out")...); res != "sink out deleted\n" {
		t.Fatalf("delete: %q", res)
	}
	if list := mustCtl(t, append(g, "sinks", "list")...); strings.Contains(list, "out ") {
		t.Fatalf("deleted sink still listed:\n%s", list)
	}
}

// TestFailedConfig: a rejecting sink shows FAILED with its error, and
// config get --failed gives the error and the (redacted) answer body.
func TestFailedConfig(t *testing.T) {
	addr := startHub(t, hubOpts{})
	g := []string{"--addr", addr}
	mustCtl(t, append(g, "sinks", "put", "-f", writeFile(t, "s.yaml", "- name: gw\n  kind: reject\n  custom: {}\n"))...)
	mustCtl(t, append(g, "push", "-f", writeFile(t, "c.json", `{"_format_version":"3.0"}`))...)
	waitStatus(t, regexp.MustCompile(`(?m)^gw\s+reject\s+FAILED\s+0/1\s+1\s+-\s+rejected: invalid declarative configuration$`), g...)
	_, cfg, errs := ctl(t, append(g, "config", "get", "--sink", "gw", "--failed")...)
	if cfg != `{"_format_version":"3.0"}` {
		t.Fatalf("failed config: %q", cfg)
	}
	if !strings.Contains(errs, "# error: rejected: invalid declarative configuration") || !strings.Contains(errs, "required") || strings.Contains(errs, "hunter2") {
		t.Fatalf("failed config diagnostics:\n%s", errs)
	}
}

// TestErrors: every failure exits non-zero with one line naming the
// command and the gRPC code.
func TestErrors(t *testing.T) {
	addr := startHub(t, hubOpts{})
	g := []string{"--addr", addr}
	cases := []struct {
		args []string
		code int
		line string
	}{
		{[]string{"push", "-f", writeFile(t, "bad.json", `{"services":[]}`)}, 1, "confighubctl: push: InvalidArgument: "},
		{[]string{"push", "-f", writeFile(t, "ok.json", `{"_format_version":"3.0"}`), "--expected-generation", "7"}, 1, "confighubctl: push: FailedPrecondition: "},
		{[]string{"status", "--stream", "nope"}, 1, "confighubctl: status: NotFound: "},
		{[]string{"sinks", "delete", "ghost"}, 1, "confighubctl: sinks delete ghost: NotFound: "},
		{[]string{"sinks", "put", "-f", writeFile(t, "bad.yaml", "- name: x\n  kind: nosuchkind\n  custom: {}\n")}, 1, "confighubctl: sinks put x: InvalidArgument: "},
		{[]string{"push", "-f", "/nonexistent/file.json"}, 1, "confighubctl: push: open /nonexistent/file.json: no such file or directory"},
		{[]string{"push"}, 2, "confighubctl: push: -f FILE is required"},
		{[]string{"frobnicate"}, 2, `confighubctl: unknown command "frobnicate"`},
		{[]string{"--output", "xml", "status"}, 2, `confighubctl: --output "xml": want table or json`},
		{[]string{"config", "get", "--failed"}, 2, "confighubctl: config get: --failed needs --sink NAME"},
		{[]string{"status", "--bogus"}, 2, "confighubctl: status: flag provided but not defined: -bogus"},
		{[]string{"--bogus", "status"}, 2, "confighubctl: flag provided but not defined: -bogus"},
		{[]string{"sinks", "delete", "x", "--timeout", "soon"}, 2, "confighubctl: sinks delete: invalid value"},
	}
	for _, c := range cases {
		code, _, errs := ctl(t, append(g, c.args...)...)
		if code != c.code || !strings.HasPrefix(errs, c.line) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line starting %q", c.args, code, errs, c.code, c.line)
		}
	}
	// An unreachable hub is one line too.
	code, _, errs := ctl(t, "--addr", "127.0.0.1:1", "--timeout", "2s", "status")
	if code != 1 || !strings.HasPrefix(errs, "confighubctl: status: Unavailable: ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("unreachable hub: exit %d %q", code, errs)
	}
}

// TestUploadProgress: a configuration above the unary limit goes through
// UploadConfig and draws a progress bar.
func TestUploadProgress(t *testing.T) {
	addr := startHub(t, hubOpts{})
	p := writeFile(t, "big.json", bigConfig(5<<20))
	code, out, errs := ctl(t, "--addr", addr, "push", "-f", p, "--progress", "always")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "accepted: stream default generation 1") || !strings.Contains(out, "MiB") {
		t.Fatalf("stdout: %q", out)
	}
	if !strings.Contains(errs, "\rupload [") || !strings.Contains(errs, "100% 5.0 MiB / 5.0 MiB done") || !strings.Contains(errs, "] ") {
		t.Fatalf("no progress bar on stderr: %q", errs)
	}
	if n := strings.Count(errs, "\rupload ["); n < 3 {
		t.Fatalf("the bar was drawn %d times, want one per chunk", n)
	}
}

// bigConfig is a Kong configuration of services and routes of at least
// size bytes.
func bigConfig(size int) string {
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"svc-%d","host":"svc-%d.example.internal","port":80,"routes":[{"name":"r-%d","paths":["/svc/%d"]}]}`, i, i, i, i)
	}
	b.WriteString("]}")
	return b.String()
}

// TestPushUnderALoweredMessageLimit: against a hub whose
// --max-message-bytes is 1 MiB, a 1.25 MB push that PushConfig cannot
// carry is sent again by UploadConfig and accepted; so is a push by
// --upload, whose 1 MiB chunks do not fit either, and a 5 MiB one that
// uploads from the start. A push that fits no message of the hub (a
// header with a label above the limit) fails with one line naming
// --max-message-bytes.
func TestPushUnderALoweredMessageLimit(t *testing.T) {
	addr := startHub(t, hubOpts{maxMsg: 1 << 20})
	g := []string{"--addr", addr}
	// The hash in each answer is the hub's of the bytes it stored.
	for i, c := range []struct {
		what, body string
		args       []string
	}{
		{"1.25 MB by PushConfig", bigConfig(1_250_000), nil},
		{"1.25 MB by --upload", "_format_version: \"3.0\"\n# " + strings.Repeat("x", 1_250_000) + "\n", []string{"--upload"}},
		{"5 MiB", bigConfig(5 << 20), nil},
	} {
		res := mustCtl(t, append(append(g, "push", "-f", writeFile(t, "c", c.body), "--progress", "never"), c.args...)...)
		if want := fmt.Sprintf("accepted: stream default generation %d (hash %s", i+1, config.Hash([]byte(c.body))[:12]); !strings.HasPrefix(res, want) {
			t.Fatalf("push of %s: %q, want %q...", c.what, res, want)
		}
	}
	code, _, errs := ctl(t, append(g, "push", "-f", writeFile(t, "small.json", `{"_format_version":"3.0"}`), "--label", "big="+strings.Repeat("x", 1<<20))...)
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "confighubctl: push: ResourceExhausted: ") ||
		!strings.Contains(errs, "the hub refuses gRPC messages above 1048576 bytes (its --max-message-bytes)") {
		t.Fatalf("a push no message of the hub carries: exit %d, stderr %q", code, errs)
	}
}

const tokens = "reader-token read\npusher-token push\nadmin-token admin\n"

// TestAuth: --token and CONFIGHUB_TOKEN send the bearer token; a missing
// one is Unauthenticated, a too-weak one PermissionDenied.
func TestAuth(t *testing.T) {
	addr := startHub(t, hubOpts{tokens: tokens})
	cfg := writeFile(t, "c.json", `{"_format_version":"3.0"}`)
	code, _, errs := ctl(t, "--addr", addr, "push", "-f", cfg)
	if code != 1 || !strings.HasPrefix(errs, "confighubctl: push: Unauthenticated: ") {
		t.Fatalf("no token: %d %q", code, errs)
	}
	code, _, errs = ctl(t, "--addr", addr, "--token", "reader-token", "push", "-f", cfg)
	if code != 1 || !strings.HasPrefix(errs, "confighubctl: push: PermissionDenied: ") {
		t.Fatalf("read token: %d %q", code, errs)
	}
	t.Setenv("CONFIGHUB_TOKEN", "pusher-token")
	t.Setenv("CONFIGHUB_ADDR", addr)
	mustCtl(t, "push", "-f", cfg)
	code, _, errs = ctl(t, "sinks", "delete", "x")
	if code != 1 || !strings.HasPrefix(errs, "confighubctl: sinks delete x: PermissionDenied: ") {
		t.Fatalf("push token deleting a sink: %d %q", code, errs)
	}
	// A flag after the command overrides the environment.
	code, _, errs = ctl(t, "sinks", "delete", "x", "--token", "admin-token")
	if code != 1 || !strings.HasPrefix(errs, "confighubctl: sinks delete x: NotFound: ") {
		t.Fatalf("admin token: %d %q", code, errs)
	}
}

// TestTLS: the CLI verifies the hub's certificate with --tls-ca and sends
// a client certificate for mTLS.
func TestTLS(t *testing.T) {
	ca := authtest.NewCA(t, "ctl")
	sp := ca.Server(t, "hub", "127.0.0.1")
	cp := ca.Client(t, "ops")
	st, err := auth.NewServerTLS(sp.CertFile, sp.KeyFile, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := startHub(t, hubOpts{tls: st})
	mustCtl(t, "--addr", addr, "--tls-ca", ca.CertFile, "--tls-cert", cp.CertFile, "--tls-key", cp.KeyFile, "sinks", "list")
	code, _, errs := ctl(t, "--addr", addr, "--tls-ca", ca.CertFile, "--timeout", "3s", "sinks", "list")
	if code != 1 || !strings.Contains(errs, "Unavailable") {
		t.Fatalf("without a client certificate: %d %q", code, errs)
	}
	code, _, errs = ctl(t, "--addr", addr, "--timeout", "3s", "sinks", "list")
	if code != 1 {
		t.Fatalf("plaintext to a TLS hub: %d %q", code, errs)
	}
	code, _, errs = ctl(t, "--addr", addr, "--insecure", "--tls-ca", ca.CertFile, "sinks", "list")
	if code != 2 || !strings.Contains(errs, "exclude each other") {
		t.Fatalf("--insecure with --tls-ca: %d %q", code, errs)
	}
}

// TestStatusWatch: status --watch, not on a terminal, appends a table per
// change (no escape codes) and follows a push until the sink applied it;
// cancelling ends it with exit 0.
func TestStatusWatch(t *testing.T) {
	addr := startHub(t, hubOpts{})
	out := filepath.Join(t.TempDir(), "kong.json")
	mustCtl(t, "--addr", addr, "sinks", "put", "-f", writeFile(t, "s.yaml", "name: out\nfile:\n  path: "+out+"\n"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr harness.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"--addr", addr, "status", "--watch", "--redraw", "10ms"}, &stdout, &stderr)
	}()
	waitFor(t, func() bool {
		return strings.Contains(stdout.String(), "(no sinks)") || strings.Contains(stdout.String(), "out  ")
	}, "the first table")
	mustCtl(t, "--addr", addr, "push", "-f", writeFile(t, "c.json", `{"_format_version":"3.0"}`))
	applied := regexp.MustCompile(`(?m)^out\s+file\s+APPLIED\s+1/1\s`)
	waitFor(t, func() bool { return applied.MatchString(stdout.String()) }, "a table with out APPLIED 1/1")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch exit %d: %s", code, stderr.String())
	}
	s := stdout.String()
	if strings.Contains(s, "\x1b[") {
		t.Fatalf("escape codes in non-terminal output:\n%q", s)
	}
	if n := strings.Count(s, "--- "); n < 2 {
		t.Fatalf("want appended tables (at least 2), got %d:\n%s", n, s)
	}
}

// TestStatusWatchShowsAnOutage: while the hub is unreachable, status
// --watch draws a notice saying since when and the error of its last retry
// above the last table, and --output json says so on stderr; once the hub
// is back, even with nothing new to send, the notice goes, and the watch
// follows pushes again.
func TestStatusWatchShowsAnOutage(t *testing.T) {
	dir := t.TempDir() // made before the hub: removed after it stopped
	h := startOutageHub(t)
	g := []string{"--addr", h.addr}
	mustCtl(t, append(g, "sinks", "put", "-f", writeFile(t, "s.yaml", "name: out\nfile:\n  path: "+filepath.Join(dir, "kong.json")+"\n"))...)
	mustCtl(t, append(g, "push", "-f", writeFile(t, "c.json", `{"_format_version":"3.0"}`))...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var table, tableErr, jsonOut, jsonErr harness.SyncBuffer
	done := make(chan int, 2)
	go func() {
		done <- runContext(ctx, append(g, "status", "--watch", "--redraw", "10ms"), &table, &tableErr)
	}()
	go func() {
		done <- runContext(ctx, append(g, "--output", "json", "status", "--watch"), &jsonOut, &jsonErr)
	}()
	// The frame a reader sees now: the last one appended.
	frame := func() string {
		s := table.String()
		return s[strings.LastIndex(s, "\n--- ")+1:]
	}
	applied := func(gen int) *regexp.Regexp {
		return regexp.MustCompile(fmt.Sprintf(`(?m)^out\s+file\s+APPLIED\s+%d/%d\s`, gen, gen))
	}
	notice := regexp.MustCompile(`(?m)^hub unreachable since \d\d:\d\d:\d\d, retrying \(the table below is as of then\): Unavailable: \S`)
	waitFor(t, func() bool { return applied(1).MatchString(frame()) }, "a table with out APPLIED 1/1")
	waitFor(t, func() bool { return strings.Contains(jsonOut.String(), "\n") }, "the first JSON event")

	h.stop()
	waitFor(t, func() bool { return notice.MatchString(frame()) }, "the outage notice")
	if f := frame(); !applied(1).MatchString(f) || strings.Index(f, "hub unreachable") > strings.Index(f, "SINK ") {
		t.Fatalf("the notice is not above the last table:\n%s", f)
	}
	jsonNotice := regexp.MustCompile(`(?m)^confighubctl: status: hub unreachable since \d\d:\d\d:\d\d, retrying: Unavailable: \S`)
	waitFor(t, func() bool { return jsonNotice.MatchString(jsonErr.String()) }, "the outage on the JSON watch's stderr")

	h.start()
	waitFor(t, func() bool { f := frame(); return !strings.Contains(f, "hub unreachable") && applied(1).MatchString(f) }, "the table without the notice")
	waitFor(t, func() bool {
		return strings.Contains(jsonErr.String(), "confighubctl: status: hub reachable again at ")
	}, "the end of the outage on the JSON watch's stderr")
	mustCtl(t, append(g, "push", "-f", writeFile(t, "c2.json", `{"_format_version":"3.0","services":[]}`))...)
	waitFor(t, func() bool { return applied(2).MatchString(frame()) }, "a table with out APPLIED 2/2")
	cancel()
	for range 2 {
		if code := <-done; code != 0 {
			t.Fatalf("watch exit %d: %s%s", code, tableErr.String(), jsonErr.String())
		}
	}
	if tableErr.String() != "" {
		t.Fatalf("the table watch wrote to stderr: %q", tableErr.String())
	}
	if n := strings.Count(jsonErr.String(), "\n"); n != 2 {
		t.Fatalf("the JSON watch's stderr has %d lines, want the outage's start and end:\n%s", n, jsonErr.String())
	}
}

// TestOutageNotice: the notice keeps the time the outage began while the
// error of each retry replaces the last; a notice that does not change
// asks for no redraw; connected again, the view is the table alone. With
// no table yet (the hub down from the start) the notice is the frame.
func TestOutageNotice(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	refused := status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:7070: connect: connection refused\"")
	v := newStatusView()
	if !v.connection(refused, t0) || v.render(t0, 0) != "hub unreachable since 03:04:05, retrying: Unavailable: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:7070: connect: connection refused\"\n" {
		t.Fatalf("no table yet: %q", v.render(t0, 0))
	}
	snap := &confighubv1.GetStatusResponse{Stream: "default", Generation: 1, Sinks: []*confighubv1.SinkStatus{
		{Sink: "a", State: confighubv1.SinkState_SINK_STATE_APPLIED, AppliedGeneration: 1, DesiredGeneration: 1}}}
	v.fold.Apply(&confighubv1.WatchStatusResponse{Revision: 1, Event: &confighubv1.WatchStatusResponse_Snapshot{Snapshot: snap}})
	table := renderStatus(snap, t0, 0)
	if v.connection(refused, t0.Add(time.Second)) {
		t.Error("the same error again asks for a redraw")
	}
	if !v.connection(errors.New("the hub is shutting down"), t0.Add(2*time.Second)) {
		t.Error("a new error asks for no redraw")
	}
	if got, want := v.render(t0, 0), "hub unreachable since 03:04:05, retrying (the table below is as of then): the hub is shutting down\n"+table; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := v.render(t0, 40); !strings.HasPrefix(got, "hub unreachable since 03:04:05, retryi…\n") {
		t.Errorf("the notice is not cut to the width: %q", got)
	}
	if !v.connection(nil, t0.Add(3*time.Second)) || v.render(t0, 0) != table || v.down != nil {
		t.Fatalf("connected again: %q", v.render(t0, 0))
	}
	if v.connection(nil, t0.Add(4*time.Second)) {
		t.Error("connected while connected asks for a redraw")
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	harness.Eventually(t, 10*time.Second, cond, "%s", what)
}

// TestWatchRendererANSI: on a terminal each frame moves the cursor up over
// the previous frame and clears to the end of the screen, so the table is
// redrawn in place; lines are cut to the terminal width.
func TestWatchRendererANSI(t *testing.T) {
	var buf bytes.Buffer
	r := &watchRenderer{w: &buf, ansi: true, width: 60}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &confighubv1.GetStatusResponse{Stream: "default", Generation: 2, Hash: strings.Repeat("ab", 32), Sinks: []*confighubv1.SinkStatus{
		{Sink: "gw-0", Kind: "kong", State: confighubv1.SinkState_SINK_STATE_APPLYING, DesiredGeneration: 2, AppliedGeneration: 1, Attempts: 1,
			LastAppliedTime: timestamppb.New(now.Add(-90 * time.Second))},
		{Sink: "gw-1", Kind: "kong", State: confighubv1.SinkState_SINK_STATE_BACKOFF, DesiredGeneration: 2, AppliedGeneration: 1, Attempts: 3,
			LastError: "unavailable: dial tcp 127.0.0.1:8001: connect: connection refused and a very long tail", NextRetryTime: timestamppb.New(now.Add(4 * time.Second))},
	}}
	frame1 := renderStatus(st, now, r.width)
	r.draw(frame1)
	if got := buf.String(); got != "\x1b[J"+frame1 {
		t.Fatalf("first frame: %q", got)
	}
	lines := strings.Count(frame1, "\n")
	if lines != 4 {
		t.Fatalf("frame has %d lines, want 4 (header, columns, 2 sinks):\n%s", lines, frame1)
	}
	for _, l := range strings.Split(strings.TrimSuffix(frame1, "\n"), "\n") {
		if n := len([]rune(l)); n >= 60 {
			t.Errorf("line of %d runes is not cut to the width: %q", n, l)
		}
	}
	if !regexp.MustCompile(`(?m)^gw-0\s+kong\s+APPLYING\s+1/2\s+1\s+1m30s\s*$`).MatchString(frame1) {
		t.Errorf("gw-0 row:\n%s", frame1)
	}
	buf.Reset()
	st.Sinks[0].State, st.Sinks[0].AppliedGeneration = confighubv1.SinkState_SINK_STATE_APPLIED, 2
	frame2 := renderStatus(st, now, r.width)
	r.draw(frame2)
	if got, want := buf.String(), fmt.Sprintf("\x1b[%dA\x1b[J", lines)+frame2; got != want {
		t.Fatalf("second frame is not drawn over the first:\n got %q\nwant %q", got, want)
	}
	if !regexp.MustCompile(`(?m)^gw-0\s+kong\s+APPLIED\s+2/2\s`).MatchString(frame2) {
		t.Errorf("frame 2:\n%s", frame2)
	}
	// Without a width nothing is cut, and BACKOFF shows when it retries.
	full := renderStatus(st, now, 0)
	if !strings.Contains(full, "[retry in 4s] unavailable: dial tcp 127.0.0.1:8001: connect: connection refused and a very long tail") {
		t.Errorf("full table:\n%s", full)
	}
}

func TestWatchRendererPlain(t *testing.T) {
	var buf bytes.Buffer
	r := &watchRenderer{w: &buf, now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	r.draw("A\n")
	r.draw("") // the notice of an outage gone before the first table
	r.draw("B\n")
	if got, want := buf.String(), "--- 2026-01-02T03:04:05Z\nA\n\n--- 2026-01-02T03:04:05Z\nB\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

// TestViewFolding: the watch view applies sink, removal and generation
// events on top of the snapshot.
func TestViewFolding(t *testing.T) {
	v := newStatusView()
	v.fold.Apply(&confighubv1.WatchStatusResponse{Revision: 1, Event: &confighubv1.WatchStatusResponse_Snapshot{Snapshot: &confighubv1.GetStatusResponse{
		Stream: "default", Generation: 1, Sinks: []*confighubv1.SinkStatus{{Sink: "a", State: confighubv1.SinkState_SINK_STATE_APPLIED, AppliedGeneration: 1, DesiredGeneration: 1}, {Sink: "b"}},
	}}})
	v.fold.Apply(&confighubv1.WatchStatusResponse{Revision: 2, Event: &confighubv1.WatchStatusResponse_Generation{Generation: &confighubv1.GenerationStatus{Generation: 2, Hash: "ff", SinksTotal: 2}}})
	v.fold.Apply(&confighubv1.WatchStatusResponse{Revision: 3, Event: &confighubv1.WatchStatusResponse_Sink{Sink: &confighubv1.SinkStatus{Sink: "a", State: confighubv1.SinkState_SINK_STATE_APPLYING, AppliedGeneration: 1, DesiredGeneration: 2}}})
	v.fold.Apply(&confighubv1.WatchStatusResponse{Revision: 4, Event: &confighubv1.WatchStatusResponse_SinkRemoved{SinkRemoved: "b"}})
	v.fold.Apply(&confighubv1.WatchStatusResponse{Revision: 5, Event: &confighubv1.WatchStatusResponse_Sink{Sink: &confighubv1.SinkStatus{Sink: "c", State: confighubv1.SinkState_SINK_STATE_PENDING, DesiredGeneration: 2}}})
	got := v.render(time.Now(), 0)
	for _, want := range []string{"generation 2 (ff)  applied by 0/2 sinks", "a     ", "APPLYING", "1/2", "c  ", "PENDING"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if regexp.MustCompile(`(?m)^b\s`).MatchString(got) {
		t.Errorf("removed sink b still shown:\n%s", got)
	}
}

// TestStatusWatchJSON: with --output json every event is one JSON line.
func TestStatusWatchJSON(t *testing.T) {
	addr := startHub(t, hubOpts{})
	mustCtl(t, "--addr", addr, "push", "-f", writeFile(t, "c.json", `{"_format_version":"3.0"}`))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr harness.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"--addr", addr, "--output", "json", "status", "--watch"}, &stdout, &stderr)
	}()
	waitFor(t, func() bool { return strings.Contains(stdout.String(), "\n") }, "the first event")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	first, _, _ := strings.Cut(stdout.String(), "\n")
	var ev struct {
		Revision       string
		Snapshot       struct{ Generation string }
		SnapshotReason string
	}
	if err := json.Unmarshal([]byte(first), &ev); err != nil || ev.Snapshot.Generation != "1" || ev.SnapshotReason != "start" {
		t.Fatalf("first line %q: %v %+v", first, err, ev)
	}
}

// TestSinksJSONIsOneDocument: --output json of a command acting on several
// sinks prints one JSON document (an array), one sink one object.
func TestSinksJSONIsOneDocument(t *testing.T) {
	addr := startHub(t, hubOpts{})
	dir := t.TempDir()
	two := writeFile(t, "two.yaml", "- name: a\n  file:\n    path: "+filepath.Join(dir, "a")+"\n- name: b\n  file:\n    path: "+filepath.Join(dir, "b")+"\n")
	one := writeFile(t, "one.yaml", "name: c\nfile:\n  path: "+filepath.Join(dir, "c")+"\n")
	for _, c := range []struct {
		args []string
		n    int // elements of the array; 0: one object
	}{
		{[]string{"sinks", "put", "-f", two}, 2},
		{[]string{"sinks", "put", "-f", one}, 0},
		{[]string{"sinks", "delete", "a", "b"}, 2},
		{[]string{"sinks", "delete", "c"}, 0},
	} {
		out := mustCtl(t, append([]string{"--addr", addr, "--output", "json"}, c.args...)...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: not one JSON document: %v\n%s", c.args, err, out)
		}
		if l, ok := v.([]any); c.n > 0 && (!ok || len(l) != c.n) || c.n == 0 && ok {
			t.Fatalf("%v: want %d elements (0: an object), got %s", c.args, c.n, out)
		}
	}
}

// TestPushWarnsWithoutSinks: a push to a stream that has no sinks (a
// misspelt --stream) is accepted, with a warning on stderr naming the
// stream; a push to a stream with sinks warns nothing.
func TestPushWarnsWithoutSinks(t *testing.T) {
	// Made before the hub, so it is removed after the hub stopped: the file
	// sink may still be writing into it when the test returns.
	out := t.TempDir()
	addr := startHub(t, hubOpts{})
	g := []string{"--addr", addr}
	mustCtl(t, append(g, "sinks", "put", "-f", writeFile(t, "sink.yaml", "name: out\nfile:\n  path: "+filepath.Join(out, "k.json")+"\n"))...)
	cfg := writeFile(t, "kong.yaml", "_format_version: \"3.0\"\n")
	code, out, errOut := ctl(t, append(g, "push", "-f", cfg, "--stream", "defualt")...)
	if code != 0 || !strings.HasPrefix(out, "accepted: stream defualt generation 1") ||
		!strings.Contains(errOut, `warning: stream defualt has no sinks: nothing applies this configuration until a sink of stream "defualt" is added`) {
		t.Fatalf("push to a stream without sinks: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if code, _, errOut := ctl(t, append(g, "push", "-f", cfg)...); code != 0 || strings.Contains(errOut, "warning") {
		t.Fatalf("push to a stream with a sink: exit %d, stderr %q", code, errOut)
	}
}

// TestStatusShowsExcludedEntities: a DEGRADED sink's row counts the
// excluded entities, and each is listed under the table with its
// Kubernetes object, the gateway's message or what it depends on, and
// whether its previous version was kept.
func TestStatusShowsExcludedEntities(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &confighubv1.GetStatusResponse{Stream: "default", Generation: 3, Sinks: []*confighubv1.SinkStatus{
		{Sink: "gw-0", Kind: "kong", State: confighubv1.SinkState_SINK_STATE_DEGRADED, DesiredGeneration: 3, AppliedGeneration: 2,
			RejectedGeneration: 3, FallbackGeneration: 3, FallbackHash: strings.Repeat("cd", 32), LastError: "rejected: gateway rejected",
			ExcludedEntities: []*confighubv1.ExcludedEntity{
				{EntityType: "route", EntityName: "default.echo.0", EntityTags: []string{"k8s-name:echo", "k8s-namespace:default", "k8s-kind:Ingress"},
					Message: "colour: unknown field", PreviousVersionKept: true},
				{EntityType: "plugin", EntityId: "61a22b86-f859-5c8a-a23c-97b92b14b635", DependsOn: "route default.echo.0"},
			}},
	}}
	out := renderStatus(st, now, 0)
	for _, want := range []string{
		"DEGRADED (2 excluded)",
		"gw-0 runs a fallback of generation 3 (cdcdcdcdcdcd) without 2 entities:\n",
		"  route default.echo.0 (Ingress default/echo): colour: unknown field [previous version kept]\n",
		"  plugin 61a22b86-f859-5c8a-a23c-97b92b14b635: depends on route default.echo.0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestStatusPrintsThePageURL: status names the status page the hub reports,
// and says nothing of one when the hub serves none.
func TestStatusPrintsThePageURL(t *testing.T) {
	sinkFile := func(t *testing.T) string {
		return writeFile(t, "sink.yaml", "name: out\nfile:\n  path: "+filepath.Join(t.TempDir(), "kong.yaml")+"\n")
	}
	addr := startHub(t, hubOpts{pageURL: "http://hub.example:9464/"})
	mustCtl(t, "--addr", addr, "sinks", "put", "-f", sinkFile(t))
	if out := mustCtl(t, "--addr", addr, "status"); !strings.HasSuffix(out, "status page: http://hub.example:9464/\n") {
		t.Fatalf("status output %q, want the page URL on its last line", out)
	}
	plain := startHub(t, hubOpts{})
	mustCtl(t, "--addr", plain, "sinks", "put", "-f", sinkFile(t))
	if out := mustCtl(t, "--addr", plain, "status"); strings.Contains(out, "status page") {
		t.Fatalf("status output %q names a page the hub does not serve", out)
	}
}
