package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/test/harness"
)

// TestProfilingNeedsMetrics: --profiling with the metrics listener
// disabled is refused at start (exit 2, naming both flags) instead of
// silently serving nothing; with --profiling the metrics listener must
// bind, even on the default address: taken, the start fails naming it,
// where without --profiling the hub serves with metrics disabled.
func TestProfilingNeedsMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr strings.Builder
	if code := run(ctx, []string{"--store", "memory", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--profiling"}, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr.String())
	}
	if s := stderr.String(); !strings.Contains(s, "confighub: --profiling") || !strings.Contains(s, `--metrics-listen ""`) {
		t.Fatalf("the refusal does not name --profiling and --metrics-listen:\n%s", s)
	}
	for _, c := range []struct {
		args     []string
		required bool
	}{
		{nil, false},
		{[]string{"--profiling"}, true},
		{[]string{"--profiling=false"}, false},
	} {
		f, err := parseFlags(c.args, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		if f.ops.metricsRequired() != c.required {
			t.Errorf("%q: metricsRequired=%v, want %v", c.args, f.ops.metricsRequired(), c.required)
		}
	}

	// The default address taken: an ephemeral port stands in for it, set
	// as the default is (no --metrics-listen given), since the real
	// default may be in use on this machine.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, profiling := range []bool{true, false} {
		f, err := parseFlags([]string{"--store", "memory", "--listen", "127.0.0.1:0", "--profiling=" + strconv.FormatBool(profiling)}, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		f.ops.metricsListen = addr
		logs := &lineWatch{re: regexp.MustCompile(`msg="(confighub serving)"`), found: make(chan string, 1)}
		sctx, stop := context.WithCancel(context.Background())
		defer stop()
		errc := make(chan error, 1)
		go func() { errc <- serve(sctx, f, slog.New(slog.NewTextHandler(logs, nil))) }()
		select {
		case err = <-errc:
		case <-logs.found:
			stop()
			err = <-errc
			if profiling {
				t.Errorf("the default address taken, with --profiling: the hub served:\n%s", logs.String())
			}
		case <-time.After(30 * time.Second): // failsafe
			t.Fatalf("the hub neither served nor stopped:\n%s", logs.String())
		}
		if want := "--metrics-listen " + addr + ": listen tcp " + addr; profiling && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("the default address taken, with --profiling: %v, want the start to fail with %q", err, want)
		}
		if !profiling && (err != nil || !strings.Contains(logs.String(), "metrics disabled: the default --metrics-listen is in use")) {
			t.Errorf("the default address taken, without --profiling: %v, want metrics disabled with a warning:\n%s", err, logs.String())
		}
	}
}

// TestProfilingWired: the hub serves the profiles beside /metrics and the
// status page only with --profiling, and with --auth-tokens only to an
// admin token.
func TestProfilingWired(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok-read read\ntok-admin admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	get := func(url, token string) (int, []byte) { t.Helper(); return harness.Get(t, c, url, token) }

	metricsRE := regexp.MustCompile(`msg="metrics serving" listen=(127\.0\.0\.1:[0-9]+)`)
	_, addr := startHub(t, metricsRE, "--metrics-listen", "127.0.0.1:0", "--auth-tokens", tokens)
	off := "http://" + addr
	if code, _ := get(off+"/debug/pprof/heap", "tok-admin"); code != http.StatusNotFound {
		t.Errorf("without --profiling: /debug/pprof/heap %d, want 404", code)
	}
	if code, _ := get(off+"/debug/pprof/", "tok-admin"); code != http.StatusNotFound {
		t.Errorf("without --profiling: /debug/pprof/ %d, want 404", code)
	}

	h, addr := startHub(t, metricsRE, "--metrics-listen", "127.0.0.1:0", "--auth-tokens", tokens, "--profiling")
	on := "http://" + addr
	for _, c := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"tok-read", http.StatusForbidden}, {"tok-admin", http.StatusOK}} {
		code, body := get(on+"/debug/pprof/heap", c.token)
		if code != c.want {
			t.Errorf("heap with %q: %d %.120q, want %d", c.token, code, body, c.want)
		}
		if code == http.StatusOK && !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
			t.Errorf("heap: not a gzipped profile: %.40q", body)
		}
	}
	for path, want := range map[string]int{"/metrics": http.StatusOK, "/": http.StatusOK, "/api/v1/streams": http.StatusUnauthorized} {
		if code, _ := get(on+path, ""); code != want {
			t.Errorf("with --profiling: %s %d, want %d", path, code, want)
		}
	}

	// A shutdown during a 60 s CPU profile ends the profile (with what it
	// gathered) instead of waiting out the metrics listener's 5 s
	// shutdown timeout.
	prof := make(chan int, 1)
	go func() { // no t.Fatal here: -1 for a failed request
		req, _ := http.NewRequest(http.MethodGet, on+"/debug/pprof/profile?seconds=60", nil)
		req.Header.Set("Authorization", "Bearer tok-admin")
		res, err := c.Do(req) // c's timeout (30 s) is the failsafe
		if err != nil {
			prof <- -1
			return
		}
		_, err = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if err != nil {
			prof <- -1
			return
		}
		prof <- res.StatusCode
	}()
	harness.Eventually(t, 30*time.Second, func() bool { return strings.Contains(h.logs.String(), "profiling: CPU profile started") }, "the CPU profile started")
	h.stop()
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second): // failsafe
		t.Fatalf("the hub did not stop:\n%s", h.logs.String())
	}
	if code := <-prof; code != http.StatusOK { // bounded by c's timeout
		t.Errorf("the CPU profile ended by the shutdown: %d, want 200", code)
	}
	if l := h.logs.String(); h.code != 0 || strings.Contains(l, "metrics server shutdown") {
		t.Errorf("exit %d; the shutdown waited for the CPU profile:\n%s", h.code, l)
	}
}
