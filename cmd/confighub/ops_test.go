package main

import (
	"context"
	"github.com/confighub/confighub/test/harness"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRequireLoopback: without tokens only loopback addresses are allowed.
func TestRequireLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:7070", "127.0.0.2:0", "[::1]:7070", "localhost:7070"} {
		if err := requireLoopback("--listen", addr, "push"); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:7070", ":7070", "[::]:7070", "10.1.2.3:7070", "192.168.0.10:0"} {
		err := requireLoopback("--listen", addr, "push")
		if err == nil || !strings.Contains(err.Error(), "--insecure-listen-any") || !strings.Contains(err.Error(), "--auth-tokens") {
			t.Errorf("%s: want a refusal naming --auth-tokens and --insecure-listen-any, got %v", addr, err)
		}
	}
	if err := requireLoopback("--listen", "no-port", "push"); err == nil {
		t.Error("an address without a port must fail")
	}
}

// TestMetricsListenPolicy: /metrics on a non-loopback address follows the
// rule of --listen: refused at start without --auth-tokens (the hub exits
// 1 naming the flag), accepted with tokens or --insecure-listen-any.
func TestMetricsListenPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr strings.Builder
	if code := run(ctx, []string{"--store", "memory", "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0"}, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1: a non-loopback --metrics-listen without tokens must be refused\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--metrics-listen 0.0.0.0:0 is not a loopback address") || !strings.Contains(stderr.String(), "--insecure-listen-any") {
		t.Fatalf("the refusal does not name --metrics-listen and the override:\n%s", stderr.String())
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok-1 read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--metrics-listen", "0.0.0.0:9464"}, false},
		{[]string{"--metrics-listen", ":9464"}, false},
		{[]string{"--metrics-listen", "[::]:9464"}, false},
		{[]string{"--metrics-listen", "0.0.0.0:9464", "--insecure-listen-any"}, true},
		{[]string{"--metrics-listen", "0.0.0.0:9464", "--auth-tokens", tokens}, true},
		{[]string{"--metrics-listen", "127.0.0.1:9464"}, true},
		{[]string{"--metrics-listen", ""}, true},
	} {
		f, err := parseFlags(c.args, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		if err := checkListenPolicy(f); (err == nil) != c.ok {
			t.Errorf("%v: got %v, want ok=%v", c.args, err, c.ok)
		}
	}
}

// TestOpsFlags: the security and metrics flags parse, with their defaults.
func TestOpsFlags(t *testing.T) {
	f, err := parseFlags([]string{"--auth-tokens", "t", "--tls-cert", "c", "--tls-key", "k", "--tls-client-ca", "ca", "--insecure-listen-any", "--diagnostics-include-secrets", "--metrics-listen", ""}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	o := f.ops
	if o.authTokens != "t" || o.tlsCert != "c" || o.tlsKey != "k" || o.tlsClientCA != "ca" || !o.insecureListenAny || !o.includeSecrets || o.metricsListen != "" {
		t.Fatalf("%+v", o)
	}
	d, err := parseFlags(nil, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if d.ops.metricsListen != defaultMetricsListen || d.ops.includeSecrets || d.ops.insecureListenAny {
		t.Fatalf("defaults: %+v", d.ops)
	}
}

// TestSIGHUPDuringStartup: a SIGHUP that arrives while the hub is still
// starting (store open, hub start) neither kills the process nor is lost:
// the tokens are reloaded once the hub serves.
func TestSIGHUPDuringStartup(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok-1 read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := parseFlags([]string{"--store", "memory", "--metrics-listen", "", "--auth-tokens", tokens}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	var logs harness.SyncBuffer
	o, err := startOps(f, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	// Still starting: without the early handler this kills the test binary.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := o.serve(context.Background(), f, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500 && !strings.Contains(logs.String(), "auth tokens reloaded"); i++ { // bounded wait
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "auth tokens reloaded") {
		t.Fatalf("the early SIGHUP was not handled:\n%s", logs.String())
	}
}

// TestExplicitMetricsListenInUse: an address given with --metrics-listen
// that is taken fails the start (exit 1, naming the flag), even when it is
// the default address spelled out; only the unasked-for default degrades
// to "metrics disabled".
func TestExplicitMetricsListenInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr strings.Builder
	addr := taken.Addr().String()
	if code := run(ctx, []string{"--store", "memory", "--listen", "127.0.0.1:0", "--metrics-listen", addr}, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1: a taken --metrics-listen must fail the start\n%s", code, stderr.String())
	}
	if want := "confighub: --metrics-listen " + addr + ": listen tcp " + addr; !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "metrics disabled") {
		t.Fatalf("want %q and no 'metrics disabled':\n%s", want, stderr.String())
	}
	for _, c := range []struct {
		args []string
		set  bool
	}{
		{nil, false},
		{[]string{"--metrics-listen", defaultMetricsListen}, true},
		{[]string{"--metrics-listen=" + defaultMetricsListen}, true},
		{[]string{"--metrics-listen", ""}, true},
	} {
		f, err := parseFlags(c.args, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		if f.ops.metricsListenSet != c.set {
			t.Errorf("%q: metricsListenSet=%v, want %v", c.args, f.ops.metricsListenSet, c.set)
		}
	}
}

// --upload-budget-bytes defaults to two of the largest configurations and
// may not be smaller than one (0: no budget).
func TestUploadBudgetFlag(t *testing.T) {
	d, err := parseFlags(nil, &strings.Builder{})
	if err != nil || d.uploadBudget != 2*d.maxConfig {
		t.Fatalf("default %d (max config %d): %v", d.uploadBudget, d.maxConfig, err)
	}
	if _, err := parseFlags([]string{"--upload-budget-bytes", "1000", "--max-config-bytes", "2000"}, &strings.Builder{}); err == nil ||
		!strings.Contains(err.Error(), "--upload-budget-bytes 1000 is smaller than --max-config-bytes 2000") {
		t.Fatalf("a budget below the largest config: %v", err)
	}
	for _, args := range [][]string{{"--upload-budget-bytes", "0"}, {"--upload-budget-bytes", "2000", "--max-config-bytes", "2000"}} {
		if _, err := parseFlags(args, &strings.Builder{}); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}
