package metrics_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/metrics"
	"github.com/confighub/confighub/test/harness"
)

// listen serves a fresh metric set on a loopback port; it returns the
// base URL and a client whose connections end with the test.
func listen(t *testing.T, log *slog.Logger, opts ...metrics.ListenOption) (string, *http.Client) {
	t.Helper()
	set, err := metrics.New()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := set.Listen("127.0.0.1:0", log, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		c.CloseIdleConnections()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return "http://" + srv.Addr(), c
}

// gunzip returns the profile a gzip body holds (pprof's format is a
// gzipped protocol buffer); it fails the test on anything else.
func gunzip(t *testing.T, what string, body []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: not gzip (%v): %.80q", what, err, body)
	}
	b, err := io.ReadAll(zr) // checks the CRC too
	if err != nil || len(b) == 0 {
		t.Fatalf("%s: %d bytes, %v", what, len(b), err)
	}
	return b
}

// TestProfilingOff: without WithProfiling (the default, no --profiling)
// nothing is served under /debug/pprof/.
func TestProfilingOff(t *testing.T) {
	base, c := listen(t, slogDiscard())
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline"} {
		if code, _ := harness.Get(t, c, base+p, ""); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	if code, _ := harness.Get(t, c, base+"/metrics", ""); code != http.StatusOK {
		t.Errorf("/metrics: %d", code)
	}
}

// TestProfilesServed: with WithProfiling and no tokens, the index, the
// command line, the symbol table, a short trace and every named profile
// are served; heap and goroutine are pprof profiles of their kind.
func TestProfilesServed(t *testing.T) {
	base, c := listen(t, slogDiscard(), metrics.WithProfiling(nil))
	code, body := harness.Get(t, c, base+"/debug/pprof/", "")
	if code != http.StatusOK {
		t.Fatalf("index: %d %s", code, body)
	}
	for _, name := range append([]string{"profile", "trace"}, metrics.NamedProfiles()...) {
		if !bytes.Contains(body, []byte(">"+name+"<")) {
			t.Errorf("the index does not list %s", name)
		}
	}
	for name, sampleType := range map[string]string{"heap": "inuse_space", "goroutine": "goroutine"} {
		code, body := harness.Get(t, c, base+"/debug/pprof/"+name, "")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		if p := gunzip(t, name, body); !bytes.Contains(p, []byte(sampleType)) {
			t.Errorf("%s: the profile has no %q sample type", name, sampleType)
		}
	}
	for _, name := range []string{"allocs", "block", "mutex", "threadcreate"} {
		code, body := harness.Get(t, c, base+"/debug/pprof/"+name, "")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		gunzip(t, name, body)
	}
	if code, body := harness.Get(t, c, base+"/debug/pprof/goroutine?debug=1", ""); code != http.StatusOK || !bytes.Contains(body, []byte("metrics_test.TestProfilesServed")) {
		t.Errorf("goroutine?debug=1: %d, the test's own goroutine missing:\n%.300s", code, body)
	}
	if code, body := harness.Get(t, c, base+"/debug/pprof/cmdline", ""); code != http.StatusOK || !bytes.Contains(body, []byte("metrics.test")) {
		t.Errorf("cmdline: %d %q", code, body)
	}
	if code, body := harness.Get(t, c, base+"/debug/pprof/symbol", ""); code != http.StatusOK || !bytes.HasPrefix(body, []byte("num_symbols: 1")) {
		t.Errorf("symbol: %d %q", code, body)
	}
	// Trace takes fractions of a second.
	if code, body := harness.Get(t, c, base+"/debug/pprof/trace?seconds=0.05", ""); code != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Errorf("trace: %d %.40q", code, body)
	}
	if code, _ := harness.Get(t, c, base+"/debug/pprof/nosuch", ""); code != http.StatusNotFound {
		t.Errorf("an unknown profile: %d, want 404", code)
	}
}

// TestProfilingAuth: with tokens every profile needs the admin role: no
// or an unknown token 401, a read or push token 403 (the status page's
// answers), an admin token 200; refusals are logged without the token,
// and a CPU profile's or trace's start with the admin token's name. /metrics stays as
// open as before.
func TestProfilingAuth(t *testing.T) {
	tokens, err := auth.ParseTokens([]byte("tok-read read\ntok-push push\ntok-admin admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs harness.SyncBuffer
	base, c := listen(t, slog.New(slog.NewTextHandler(&logs, nil)), metrics.WithProfiling(auth.New(tokens)))
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=2", "/debug/pprof/cmdline", "/debug/pprof/symbol", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
		for _, tc := range []struct {
			token string
			want  int
		}{
			{"", http.StatusUnauthorized},
			{"bogus-token", http.StatusUnauthorized},
			{"tok-read", http.StatusForbidden},
			{"tok-push", http.StatusForbidden},
		} {
			if code, body := harness.Get(t, c, base+p, tc.token); code != tc.want {
				t.Errorf("GET %s with %q: %d %.120q, want %d", p, tc.token, code, body, tc.want)
			}
		}
	}
	code, body := harness.Get(t, c, base+"/debug/pprof/heap", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("heap with the admin token: %d %s", code, body)
	}
	gunzip(t, "heap", body)
	for _, p := range []string{"profile", "trace"} {
		if code, body := harness.Get(t, c, base+"/debug/pprof/"+p+"?seconds=1", "tok-admin"); code != http.StatusOK {
			t.Fatalf("%s with the admin token: %d %.120q", p, code, body)
		}
	}
	if code, _ := harness.Get(t, c, base+"/metrics", ""); code != http.StatusOK {
		t.Errorf("/metrics without a token: %d", code)
	}
	l := logs.String()
	if !strings.Contains(l, "profiling: token refused") {
		t.Errorf("refusals are not logged:\n%s", l)
	}
	for _, what := range []string{"CPU profile", "trace"} {
		started := false
		for line := range strings.Lines(l) {
			if strings.Contains(line, `msg="profiling: `+what+` started" seconds=1`) && strings.Contains(line, `token="line 3"`) {
				started = true
			}
		}
		if !started {
			t.Errorf("the %s's start is not logged with the admin token's name (line 3 of the tokens):\n%s", what, l)
		}
	}
	for _, tok := range []string{"bogus-token", "tok-read", "tok-push", "tok-admin"} {
		if strings.Contains(l, tok) {
			t.Errorf("the log quotes the token %q:\n%s", tok, l)
		}
	}
}

// TestProfileSecondsBounded: a seconds parameter over MaxProfileSeconds,
// or one that is not a positive number (an integer where the profile
// reads one), is refused with 400 before anything runs.
func TestProfileSecondsBounded(t *testing.T) {
	base, c := listen(t, slogDiscard(), metrics.WithProfiling(nil), metrics.WithProfileStarted(func() {
		t.Error("a profile with a refused seconds parameter started")
	}))
	for _, p := range []string{
		"/debug/pprof/profile?seconds=61",
		"/debug/pprof/profile?seconds=3600",
		"/debug/pprof/profile?seconds=1.5", // Profile would run its default 30 s
		"/debug/pprof/profile?seconds=-1",
		"/debug/pprof/trace?seconds=60.5",
		"/debug/pprof/trace?seconds=NaN",
		"/debug/pprof/heap?seconds=3600",
		"/debug/pprof/allocs?seconds=x",
	} {
		if code, body := harness.Get(t, c, base+p, ""); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d %.120q, want 400", p, code, body)
		}
	}
}

// TestOneCPUProfileAtATime: while a CPU profile runs, a second one and a
// trace get 409 Conflict; the first completes with its profile, and then
// frees the slot: a trace after it is served.
func TestOneCPUProfileAtATime(t *testing.T) {
	started := make(chan struct{}, 2)
	base, c := listen(t, slogDiscard(), metrics.WithProfiling(nil), metrics.WithProfileStarted(func() { started <- struct{}{} }))
	first := getAsync(c, base+"/debug/pprof/profile?seconds=1")
	select {
	case <-started:
	case r := <-first:
		t.Fatalf("the first profile ended before it started: %d %.120q", r.code, r.body)
	case <-time.After(30 * time.Second):
		t.Fatal("the first profile never started")
	}
	for _, p := range []string{"/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
		if code, body := harness.Get(t, c, base+p, ""); code != http.StatusConflict {
			t.Errorf("GET %s while a CPU profile runs: %d %.120q, want 409", p, code, body)
		}
	}
	r := <-first
	if r.code != http.StatusOK {
		t.Fatalf("the first profile: %d %.120q", r.code, r.body)
	}
	gunzip(t, "CPU profile", r.body)
	if len(started) != 0 {
		t.Error("a refused profile started")
	}
	// The slot is free again once the first ends.
	if code, body := harness.Get(t, c, base+"/debug/pprof/trace?seconds=0.01", ""); code != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Errorf("a trace after the CPU profile ended: %d %.120q, want 200 and a trace", code, body)
	}
}

// result is the outcome of a request made off the test's goroutine: its
// status and body, or code -1 and the error as body.
type result struct {
	code int
	body []byte
}

// getAsync gets url on its own goroutine (t.Fatal must not run there) and
// hands over the result; the request gives up after 30 s (a failsafe).
func getAsync(c *http.Client, url string) <-chan result {
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		r, err := c.Do(req)
		if err != nil {
			res <- result{code: -1, body: []byte(err.Error())}
			return
		}
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		if err != nil {
			b = []byte(err.Error())
		}
		res <- result{r.StatusCode, b}
	}()
	return res
}

// TestProfilesEndWithBaseContext: a running CPU profile, trace or delta
// profile ends as the context given by WithBaseContext ends (the CPU
// profile and trace with what they gathered), so Shutdown right after
// returns at once instead of waiting for them (up to MaxProfileSeconds)
// and failing at its deadline.
func TestProfilesEndWithBaseContext(t *testing.T) {
	for _, long := range []string{"profile?seconds=60", "trace?seconds=60"} {
		t.Run(strings.Split(long, "?")[0], func(t *testing.T) {
			set, err := metrics.New()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{}, 2)
			srv, err := set.Listen("127.0.0.1:0", slogDiscard(), nil, metrics.WithProfiling(nil),
				metrics.WithProfileStarted(func() { started <- struct{}{} }), metrics.WithBaseContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Transport: &http.Transport{}}
			defer c.CloseIdleConnections()
			var results []<-chan result
			for _, p := range []string{long, "heap?seconds=60"} {
				res := getAsync(c, "http://"+srv.Addr()+"/debug/pprof/"+p)
				select {
				case <-started:
				case r := <-res:
					t.Fatalf("%s ended before it started: %d %.120q", p, r.code, r.body)
				}
				results = append(results, res)
			}
			cancel()
			sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second) // failsafe, well below 60 s
			defer scancel()
			if err := srv.Shutdown(sctx); err != nil {
				t.Fatalf("Shutdown with a profile running: %v", err)
			}
			if r := <-results[0]; r.code != http.StatusOK || len(r.body) == 0 {
				t.Errorf("%s: %d %.120q, want 200 and what it gathered", long, r.code, r.body)
			}
			if r := <-results[1]; r.code == -1 || r.code == http.StatusOK {
				t.Errorf("the delta heap profile: %d %.120q, want an error answer", r.code, r.body)
			}
		})
	}
}

// TestBlockAndMutexProfilesOff: profiling sets neither the block nor the
// mutex sampling rate (their cost falls on every contended lock and
// channel operation): both profiles are served and hold no samples, even
// after the listener's own goroutines blocked.
func TestBlockAndMutexProfilesOff(t *testing.T) {
	base, c := listen(t, slogDiscard(), metrics.WithProfiling(nil))
	for _, name := range []string{"block", "mutex"} {
		code, body := harness.Get(t, c, base+"/debug/pprof/"+name+"?debug=1", "")
		if code != http.StatusOK || !bytes.HasPrefix(body, []byte("--- ")) {
			t.Fatalf("%s: %d %.120q", name, code, body)
		}
		if bytes.Contains(body, []byte(" @ ")) {
			t.Errorf("%s profile has samples: its rate is set\n%.300s", name, body)
		}
	}
	if _, body := harness.Get(t, c, base+"/debug/pprof/mutex?debug=1", ""); !bytes.Contains(body, []byte("sampling period=0\n")) {
		t.Errorf("mutex sampling is on:\n%.300s", body)
	}
}
