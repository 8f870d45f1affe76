package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/internal/harness"
)

// TestProfilingNeedsMetrics: --profiling with the metrics listener
// disabled is refused at start (exit 2, naming both flags) instead of
// silently serving nothing; with --profiling the metrics listener must
// bind, even on the default address.
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
}

// lineWatch is a log writer that hands over the first match of re.
type lineWatch struct {
	harness.SyncBuffer
	re    *regexp.Regexp
	found chan string
}

func (l *lineWatch) Write(p []byte) (int, error) {
	if m := l.re.FindSubmatch(p); m != nil {
		select {
		case l.found <- string(m[1]):
		default:
		}
	}
	return l.SyncBuffer.Write(p)
}

// startHub runs the hub with args on loopback ports until the test ends
// and returns the base URL of its metrics listener.
func startHub(t *testing.T, args ...string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	logs := &lineWatch{re: regexp.MustCompile(`msg="metrics serving" listen=(127\.0\.0\.1:[0-9]+)`), found: make(chan string, 1)}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--store", "memory", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...), logs)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("exit %d:\n%s", code, logs.String())
		}
	})
	select {
	case addr := <-logs.found:
		return "http://" + addr
	case code := <-done:
		done <- code
		t.Fatalf("hub exited %d:\n%s", code, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the hub did not start:\n%s", logs.String())
	}
	return ""
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

	off := startHub(t, "--auth-tokens", tokens)
	if code, _ := get(off+"/debug/pprof/heap", "tok-admin"); code != http.StatusNotFound {
		t.Errorf("without --profiling: /debug/pprof/heap %d, want 404", code)
	}
	if code, _ := get(off+"/debug/pprof/", "tok-admin"); code != http.StatusNotFound {
		t.Errorf("without --profiling: /debug/pprof/ %d, want 404", code)
	}

	on := startHub(t, "--auth-tokens", tokens, "--profiling")
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
}
