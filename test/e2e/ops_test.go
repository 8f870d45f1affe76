package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confighub/confighub/test/authtest"
	"github.com/confighub/confighub/test/harness"
)

func init() { e2eBinaries = append(e2eBinaries, "cmd/confighubctl") }

const opsTokens = `tokens:
  - name: dashboard
    token: e2e-read-4b1f0c
    role: read
  - name: controller
    token: e2e-push-9a27d3
    role: push
  - name: operator
    token: e2e-admin-51c8e2
    role: admin
`

var metricsRE = regexp.MustCompile(`metrics serving"? listen=(\S+)`)

func bearer(tok string) []string { return []string{"-H", "authorization: Bearer " + tok} }

func pushBody() io.Reader { return strings.NewReader(`{"config":"` + b64(minimalConfig) + `"}`) }

// TestAuthWithGrpcurl: the real grpcurl without a token gets
// Unauthenticated, with a read token pushing gets PermissionDenied, with a
// push token the push is accepted; list, describe and health need no token.
func TestAuthWithGrpcurl(t *testing.T) {
	h := harness.StartHub(t, bins, "--auth-tokens", writeSinks(t, opsTokens), "--metrics-listen", "")
	if out, err := harness.Grpcurl(t, "-plaintext", h.Addr, "list"); err != nil || !strings.Contains(out, "confighub.v1.ConfigHubService") {
		t.Fatalf("list without a token: %v\n%s", err, out)
	}
	if out, err := harness.Grpcurl(t, "-plaintext", h.Addr, "grpc.health.v1.Health/Check"); err != nil || !strings.Contains(out, "SERVING") {
		t.Fatalf("health without a token: %v %s", err, out)
	}
	_, err := harness.Grpcurl(t, "-plaintext", "-d", `{"stream":"default"}`, h.Addr, "confighub.v1.ConfigHubService/GetStatus")
	if err == nil || !strings.Contains(err.Error(), "Code: Unauthenticated") {
		t.Fatalf("GetStatus without a token: want Unauthenticated, got %v", err)
	}
	_, err = harness.Grpcurl(t, append(bearer("not-a-token"), "-plaintext", "-d", `{"stream":"default"}`, h.Addr, "confighub.v1.ConfigHubService/GetStatus")...)
	if err == nil || !strings.Contains(err.Error(), "Code: Unauthenticated") {
		t.Fatalf("GetStatus with an unknown token: want Unauthenticated, got %v", err)
	}
	_, err = harness.GrpcurlStdin(t, pushBody(), append(bearer("e2e-read-4b1f0c"), "-plaintext", "-d", "@", h.Addr, "confighub.v1.ConfigHubService/PushConfig")...)
	if err == nil || !strings.Contains(err.Error(), "Code: PermissionDenied") || !strings.Contains(err.Error(), "needs role push") {
		t.Fatalf("push with a read token: want PermissionDenied, got %v", err)
	}
	out, err := harness.GrpcurlStdin(t, pushBody(), append(bearer("e2e-push-9a27d3"), "-plaintext", "-d", "@", h.Addr, "confighub.v1.ConfigHubService/PushConfig")...)
	if err != nil || !strings.Contains(out, `"generation": "1"`) {
		t.Fatalf("push with a push token: %v\n%s", err, out)
	}
	_, err = harness.Grpcurl(t, append(bearer("e2e-push-9a27d3"), "-plaintext", "-d", `{"sink":{"name":"x","file":{"path":"/tmp/x"}}}`, h.Addr, "confighub.v1.SinkAdminService/PutSink")...)
	if err == nil || !strings.Contains(err.Error(), "Code: PermissionDenied") {
		t.Fatalf("PutSink with a push token: want PermissionDenied, got %v", err)
	}
	if out, err := harness.Grpcurl(t, append(bearer("e2e-read-4b1f0c"), "-plaintext", "-d", `{"stream":"default"}`, h.Addr, "confighub.v1.ConfigHubService/GetStatus")...); err != nil || !strings.Contains(out, `"generation": "1"`) {
		t.Fatalf("GetStatus with a read token: %v\n%s", err, out)
	}
	for _, tok := range []string{"e2e-read-4b1f0c", "e2e-push-9a27d3", "e2e-admin-51c8e2"} {
		if strings.Contains(h.Output(), tok) {
			t.Errorf("the hub logged the token %s", tok)
		}
	}
}

// TestTokensReloadOnSIGHUP: a new tokens file takes effect on SIGHUP; a
// broken one is refused, logged, and the tokens in force stay.
func TestTokensReloadOnSIGHUP(t *testing.T) {
	file := writeSinks(t, "old-token-1234 read\n")
	h := harness.StartHub(t, bins, "--auth-tokens", file, "--metrics-listen", "")
	get := func(tok string) error {
		_, err := harness.Grpcurl(t, append(bearer(tok), "-plaintext", "-d", `{}`, h.Addr, "confighub.v1.SinkAdminService/ListSinks")...)
		return err
	}
	if err := get("old-token-1234"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("new-token-5678 read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Signal(syscall.SIGHUP)
	h.WaitOutput(t, regexp.MustCompile(`msg="auth tokens reloaded".*tokens=1`), 10*time.Second)
	if err := get("new-token-5678"); err != nil {
		t.Fatalf("new token after reload: %v", err)
	}
	if err := get("old-token-1234"); err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Fatalf("old token after reload: want Unauthenticated, got %v", err)
	}
	if err := os.WriteFile(file, []byte("new-token-5678 superuser\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Signal(syscall.SIGHUP)
	h.WaitOutput(t, regexp.MustCompile(`auth tokens reload failed; keeping the previous tokens.*unknown role`), 10*time.Second)
	if err := get("new-token-5678"); err != nil {
		t.Fatalf("after a failed reload the tokens in force must stay: %v", err)
	}
	select {
	case <-h.Done():
		t.Fatal("SIGHUP ended the hub")
	default:
	}
}

// TestMetricsAfterPush: /metrics shows the per-sink and per-stream series
// after a push to a file sink, the gRPC server series, the Go and process
// collectors; a deleted sink's series go.
func TestMetricsAfterPush(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n"), "--file-sink-root", filepath.Dir(out), "--metrics-listen", "127.0.0.1:0")
	maddr := h.WaitOutput(t, metricsRE, 10*time.Second)
	if _, err := harness.GrpcurlStdin(t, pushBody(), "-plaintext", "-d", "@", h.Addr, "confighub.v1.ConfigHubService/PushConfig"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`confighub_sink_applies_total{kind="file",reason="",result="applied",sink="out"} 1`,
		`confighub_sink_state{kind="file",sink="out",state="applied"} 1`,
		`confighub_sink_state{kind="file",sink="out",state="failed"} 0`,
		`confighub_sink_apply_duration_seconds_count{kind="file",sink="out"} 1`,
		`confighub_sink_config_bytes{kind="file",sink="out"} ` + strconv.Itoa(len(minimalConfig)),
		`confighub_sink_entity_errors{kind="file",sink="out"} 0`,
		`confighub_sink_last_success_timestamp_seconds{kind="file",sink="out"} `,
		`confighub_stream_generation{stream="default"} 1`,
		`confighub_stream_convergence_seconds_count{stream="default"} 1`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="PushConfig",grpc_service="confighub.v1.ConfigHubService",grpc_type="unary"} 1`,
		`grpc_server_handling_seconds_count{grpc_method="PushConfig"`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	}
	var text string
	harness.Eventually(t, 20*time.Second, func() bool {
		text = scrape(t, maddr)
		for _, w := range want {
			if !strings.Contains(text, w) {
				return false
			}
		}
		return true
	}, "/metrics shows every series of %v", want)
	if _, err := harness.Grpcurl(t, "-plaintext", "-d", `{"name":"out"}`, h.Addr, "confighub.v1.SinkAdminService/DeleteSink"); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, func() bool { return !strings.Contains(scrape(t, maddr), `sink="out"`) }, "the deleted sink's series go")
}

// TestTLSWithGrpcurl: a hub with a certificate from a generated CA serves
// TLS (grpcurl -cacert), and with --tls-client-ca requires a client
// certificate (grpcurl -cert/-key); confighubctl does the same.
func TestTLSWithGrpcurl(t *testing.T) {
	ca := authtest.NewCA(t, "e2e")
	srv := ca.Server(t, "hub", "127.0.0.1", "localhost")
	cli := ca.Client(t, "ops")

	h := harness.StartHub(t, bins, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile, "--metrics-listen", "")
	if out, err := harness.Grpcurl(t, "-cacert", ca.CertFile, h.Addr, "grpc.health.v1.Health/Check"); err != nil || !strings.Contains(out, "SERVING") {
		t.Fatalf("TLS health with -cacert: %v %s", err, out)
	}
	if _, err := harness.Grpcurl(t, "-plaintext", "-max-time", "5", h.Addr, "grpc.health.v1.Health/Check"); err == nil {
		t.Fatal("plaintext to a TLS hub must fail")
	}
	if _, err := harness.Grpcurl(t, "-max-time", "5", h.Addr, "grpc.health.v1.Health/Check"); err == nil {
		t.Fatal("TLS without the CA must fail verification")
	}

	m := harness.StartHub(t, bins, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile, "--tls-client-ca", ca.CertFile, "--metrics-listen", "")
	if out, err := harness.Grpcurl(t, "-cacert", ca.CertFile, "-cert", cli.CertFile, "-key", cli.KeyFile, m.Addr, "list"); err != nil || !strings.Contains(out, "confighub.v1.ConfigHubService") {
		t.Fatalf("mTLS with a client certificate: %v %s", err, out)
	}
	if _, err := harness.Grpcurl(t, "-cacert", ca.CertFile, "-max-time", "5", m.Addr, "list"); err == nil {
		t.Fatal("mTLS without a client certificate must fail")
	}
	ctl := exec.Command(bins.Path("confighubctl"), "--addr", m.Addr, "--tls-ca", ca.CertFile, "--tls-cert", cli.CertFile, "--tls-key", cli.KeyFile, "sinks", "list")
	if out, err := ctl.CombinedOutput(); err != nil || !strings.Contains(string(out), "NAME") {
		t.Fatalf("confighubctl over mTLS: %v\n%s", err, out)
	}
}

// TestRefusesNonLoopbackWithoutTokens: without --auth-tokens the hub will
// not listen on every interface unless told it is on purpose.
func TestRefusesNonLoopbackWithoutTokens(t *testing.T) {
	p := harness.Start(t, bins.Path("confighub"), "--listen", "0.0.0.0:0", "--store", "memory", "--metrics-listen", "")
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the hub did not refuse a non-loopback address")
	}
	if p.Err() == nil || !strings.Contains(p.Output(), "is not a loopback address and no --auth-tokens is set") || !strings.Contains(p.Output(), "--insecure-listen-any") {
		t.Fatalf("want a clear refusal, got %v:\n%s", p.Err(), p.Output())
	}
	ok := harness.Start(t, bins.Path("confighub"), "--listen", "0.0.0.0:0", "--store", "memory", "--metrics-listen", "", "--insecure-listen-any")
	ok.WaitOutput(t, servingRE, 30*time.Second)
}

var servingRE = regexp.MustCompile(`confighub serving.* listen=(\S+)`)

// TestCtlAgainstRealHub: the confighubctl binary pushes a KIC fixture with
// credentials, follows the status, and reads back the redacted
// configuration; the hub's log never shows a credential.
func TestCtlAgainstRealHub(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.yaml")
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n"), "--file-sink-root", filepath.Dir(out), "--metrics-listen", "", "--log-level", "debug")
	ctl := func(args ...string) (string, string, error) {
		cmd := exec.Command(bins.Path("confighubctl"), append([]string{"--addr", h.Addr}, args...)...)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	fx := harness.FixturePath(t, "credentials__default.yaml")
	if o, e, err := ctl("push", "-f", fx, "--label", "source=e2e"); err != nil || !strings.Contains(o, "accepted: stream default generation 1") {
		t.Fatalf("push: %v\n%s%s", err, o, e)
	}
	harness.Eventually(t, 20*time.Second, func() bool {
		o, _, err := ctl("status")
		return err == nil && regexp.MustCompile(`(?m)^out\s+file\s+APPLIED\s+1/1\s`).MatchString(o)
	}, "confighubctl status shows out APPLIED 1/1")
	cfg, summary, err := ctl("config", "get")
	if err != nil || strings.Contains(cfg, "consumer-1-password") || !strings.Contains(summary, "credentials redacted") {
		t.Fatalf("config get: %v\n%s\n%s", err, summary, cfg)
	}
	_, e, err := ctl("push", "-f", writeSinks(t, `{"services":[]}`))
	if err == nil || e != "confighubctl: push: InvalidArgument: "+strings.TrimPrefix(firstLine(e), "confighubctl: push: InvalidArgument: ")+"\n" || strings.Count(e, "\n") != 1 {
		t.Fatalf("bad push: %v %q", err, e)
	}
	if strings.Contains(h.Output(), "consumer-1-password") {
		t.Fatalf("the hub logged a credential:\n%s", h.Output())
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// TestStatusWatchRedrawsOnATerminal runs `confighubctl status --watch` on
// a pseudo-terminal (util-linux script): each new table moves the cursor
// up over the previous one (ESC[<n>A) and clears below it (ESC[J), and
// the table follows a push until the sink applied it.
func TestStatusWatchRedrawsOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs util-linux script for a pseudo-terminal")
	}
	out := filepath.Join(t.TempDir(), "out.json")
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n"), "--file-sink-root", filepath.Dir(out), "--metrics-listen", "")
	cmd := "'" + bins.Path("confighubctl") + "' --addr " + h.Addr + " status --watch"
	p := harness.Start(t, scriptBin, "-q", "-e", "-c", cmd, "/dev/null")
	p.WaitOutput(t, regexp.MustCompile(`WAITING`), 20*time.Second)
	push := exec.Command(bins.Path("confighubctl"), "--addr", h.Addr, "push", "-f", writeSinks(t, minimalConfig))
	if b, err := push.CombinedOutput(); err != nil {
		t.Fatalf("push: %v %s", err, b)
	}
	p.WaitOutput(t, regexp.MustCompile(`\x1b\[3A\x1b\[J[^\x1b]*\nout\s+file\s+APPLIED\s+1/1`), 20*time.Second)
	s := p.Output()
	if !strings.HasPrefix(strings.TrimLeft(s, "\r\n"), "\x1b[J") {
		t.Errorf("the first frame does not start by clearing: %q", s[:min(len(s), 40)])
	}
	// Every frame after the first is drawn over the one before.
	if frames, redraws := strings.Count(s, "stream default"), strings.Count(s, "\x1b[3A\x1b[J"); redraws < 1 || redraws != frames-1 {
		t.Errorf("%d frames, %d redrawn in place; want every frame after the first redrawn: %q", frames, redraws, s)
	}
}
