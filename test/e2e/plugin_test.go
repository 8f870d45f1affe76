package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

func init() { e2eBinaries = append(e2eBinaries, "examples/webhook-plugin") }

// delivery is one POST the webhook receiver got.
type delivery struct {
	sink       string
	generation uint64
	hash       string
	bodyHash   string
	signed     bool
}

// webhookReceiver is the HTTP endpoint behind the example plugin; it checks
// the HMAC signature of every body.
type webhookReceiver struct {
	secret []byte
	mu     sync.Mutex
	got    []delivery
}

func (w *webhookReceiver) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	m := hmac.New(sha256.New, w.secret)
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	gen, _ := strconv.ParseUint(r.Header.Get("X-Confighub-Generation"), 10, 64)
	w.mu.Lock()
	w.got = append(w.got, delivery{
		sink: r.Header.Get("X-Confighub-Sink"), generation: gen, hash: r.Header.Get("X-Confighub-Hash"),
		bodyHash: config.Hash(body), signed: hmac.Equal([]byte(r.Header.Get("X-Confighub-Signature")), []byte(want)),
	})
	w.mu.Unlock()
	rw.WriteHeader(http.StatusOK)
}

// has reports whether sink got generation gen with the bytes of hash and a
// valid signature.
func (w *webhookReceiver) has(sink string, gen uint64, hash string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.got {
		if d.sink == sink && d.generation == gen && d.hash == hash && d.bodyHash == hash && d.signed {
			return true
		}
	}
	return false
}

func (w *webhookReceiver) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%+v", w.got)
}

var pluginListeningRE = regexp.MustCompile(`msg="webhook-plugin listening" listen=(\S+)`)

func startWebhookPlugin(t *testing.T, listen, url string) (*harness.Process, string) {
	t.Helper()
	p := harness.Start(t, bins.Path("webhook-plugin"), "--listen", listen, "--url", url, "--hmac-secret", "e2e-secret")
	return p, p.WaitOutput(t, pluginListeningRE, 30*time.Second)
}

func sinkStatus(t *testing.T, c confighubv1.ConfigHubServiceClient, name string) *confighubv1.SinkStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.GetStatus(ctx, &confighubv1.GetStatusRequest{})
	if err != nil {
		return nil
	}
	for _, s := range st.GetSinks() {
		if s.GetSink() == name {
			return s
		}
	}
	return nil
}

// TestWebhookPluginProcess runs the example webhook plugin as its own
// process next to a real hub: a push reaches the webhook (signed); with the
// plugin killed its sinks go to BACKOFF while a file sink keeps applying;
// restarted, the plugin receives the current generation without a new push.
func TestWebhookPluginProcess(t *testing.T) {
	recv := &webhookReceiver{secret: []byte("e2e-secret")}
	ts := httptest.NewServer(recv)
	defer ts.Close()
	plug, plugAddr := startWebhookPlugin(t, "127.0.0.1:0", ts.URL)

	out := filepath.Join(t.TempDir(), "out.json")
	// The YAML of docs/plugins.md, with a short backoff so the test is quick.
	sinks := fmt.Sprintf(`- name: out
  file:
    path: %s
- name: hook
  plugin:
    address: %s
  options:
    backoff:
      initial: 0.1s
      max: 0.5s
`, out, plugAddr)
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, sinks), "--file-sink-root", filepath.Dir(out))

	// A second sink on the same plugin, wired at run time with the grpcurl
	// command of docs/plugins.md.
	put := `{"sink": {"name": "hook-api", "plugin": {"address": "` + plugAddr + `"}, "options": {"backoff": {"initial": "0.1s", "max": "0.5s"}}}}`
	if _, err := harness.Grpcurl(t, "-plaintext", "-d", put, h.Addr, "confighub.v1.SinkAdminService/PutSink"); err != nil {
		t.Fatal(err)
	}

	hub := confighubv1.NewConfigHubServiceClient(harness.Dial(t, h.Addr))
	push := func(raw string) *confighubv1.PushConfigResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := hub.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: []byte(raw)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	cfg1 := minimalConfig
	r1 := push(cfg1)
	for _, s := range []string{"hook", "hook-api"} {
		harness.Eventually(t, 20*time.Second, func() bool { return recv.has(s, r1.GetGeneration(), r1.GetHash()) },
			"webhook receives generation %d from sink %s; got %s", r1.GetGeneration(), s, recv)
		// The webhook sees the body before the plugin answers the hub: wait
		// for the hub to record the apply before killing the plugin.
		harness.Eventually(t, 20*time.Second, func() bool {
			st := sinkStatus(t, hub, s)
			return st.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED && st.GetAppliedGeneration() == r1.GetGeneration()
		}, "sink %s APPLIED at generation %d; status %v", s, r1.GetGeneration(), sinkStatus(t, hub, s))
	}

	// The plugin crashes; the next generation reaches the file sink, and the
	// plugin's sinks wait in backoff (the last error is the failed apply,
	// "unavailable", or the plugin Runner's health report, "unreachable").
	plug.Kill()
	cfg2 := strings.Replace(minimalConfig, `"name":"svc"`, `"name":"svc-2"`, 1)
	r2 := push(cfg2)
	harness.Eventually(t, 20*time.Second, func() bool {
		s := sinkStatus(t, hub, "out")
		b, _ := os.ReadFile(out)
		return s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED && s.GetAppliedGeneration() == r2.GetGeneration() && string(b) == cfg2
	}, "file sink applies generation %d while the plugin is down", r2.GetGeneration())
	for _, s := range []string{"hook", "hook-api"} {
		harness.Eventually(t, 20*time.Second, func() bool {
			st := sinkStatus(t, hub, s)
			return st.GetState() == confighubv1.SinkState_SINK_STATE_BACKOFF && st.GetDesiredGeneration() == r2.GetGeneration() &&
				st.GetAppliedGeneration() == r1.GetGeneration() &&
				(st.GetLastErrorCode() == "unavailable" || st.GetLastErrorCode() == "unreachable")
		}, "sink %s in BACKOFF, the plugin unavailable; status %v", s, sinkStatus(t, hub, s))
	}
	if recv.has("hook", r2.GetGeneration(), r2.GetHash()) {
		t.Fatal("a killed plugin cannot have delivered")
	}

	// Restarted on the same address: it gets the current generation, with
	// no new push.
	startWebhookPlugin(t, plugAddr, ts.URL)
	for _, s := range []string{"hook", "hook-api"} {
		harness.Eventually(t, 20*time.Second, func() bool { return recv.has(s, r2.GetGeneration(), r2.GetHash()) },
			"restarted plugin receives generation %d for %s; got %s", r2.GetGeneration(), s, recv)
		harness.Eventually(t, 20*time.Second, func() bool {
			st := sinkStatus(t, hub, s)
			return st.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED && st.GetAppliedGeneration() == r2.GetGeneration()
		}, "sink %s APPLIED at generation %d; status %v", s, r2.GetGeneration(), sinkStatus(t, hub, s))
	}
	if st := sinkStatus(t, hub, "out"); st.GetAppliedGeneration() != r2.GetGeneration() {
		t.Fatalf("file sink status %v", st)
	}
}
