package statuspage_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/statuspage"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// SkipBrowserEnv set to 1 skips the browser tests, saying so; without it a
// machine without Chromium fails them.
const SkipBrowserEnv = "CONFIGHUB_SKIP_BROWSER"

// chromiumPath finds Chromium ($CONFIGHUB_CHROMIUM, then the usual names).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CONFIGHUB_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv(SkipBrowserEnv) == "1" {
		t.Skipf("%s=1: browser test skipped (no Chromium)", SkipBrowserEnv)
	}
	t.Fatalf("no Chromium found: install it (Debian: apt-get install -y chromium; `make test` does this as root), "+
		"point CONFIGHUB_CHROMIUM at it, or set %s=1 to skip the browser tests", SkipBrowserEnv)
	return ""
}

// browser starts a fresh headless Chromium and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	if os.Getenv(SkipBrowserEnv) == "1" {
		t.Skipf("%s=1: browser test skipped", SkipBrowserEnv)
	}
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Do(tctx); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return tctx
}

// screenshot saves the page as a PNG test artefact ($CONFIGHUB_SCREENSHOTS
// or the test's temporary folder).
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv("CONFIGHUB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return p
}

// fixture is an in-process hub (real engine, memory store, the Kong sink
// and a fake kind) with its status page on an HTTP test server.
type fixture struct {
	hub   *hub.Hub
	fleet *enginetest.Fleet
	page  *statuspage.Handler
	url   string
}

func startHub(t *testing.T, seed []*confighubv1.Sink, opts ...statuspage.Option) *fixture {
	return startHubWith(t, seed, nil, opts...)
}

// startHubWith is startHub with presets for the fake sinks (set before
// they are built).
func startHubWith(t *testing.T, seed []*confighubv1.Sink, presets map[string]enginetest.Behavior, opts ...statuspage.Option) *fixture {
	t.Helper()
	reg := sink.NewRegistry()
	if err := builtin.Register(reg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	fleet := enginetest.NewFleet(clockwork.NewRealClock())
	if err := fleet.Register(reg, "fake", sink.Capabilities{}, false); err != nil {
		t.Fatal(err)
	}
	for name, b := range presets {
		fleet.Preset(name, b)
	}
	// The hub's own redaction of error texts (cmd/confighub wires the same).
	eng := engine.New(reg, engine.WithMessageRedactor(redact.Message), engine.WithSecretValues(redact.SecretValues))
	h := hub.New(memory.New(), hub.PortsOf(eng))
	if err := h.Start(context.Background(), seed); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	page := statuspage.New(ctx, h, opts...)
	srv := httptest.NewServer(page)
	t.Cleanup(func() { cancel(); srv.Close(); eng.Stop() })
	return &fixture{hub: h, fleet: fleet, page: page, url: srv.URL + "/"}
}

func (f *fixture) push(t *testing.T, raw []byte, labels map[string]string) uint64 {
	t.Helper()
	res, err := f.hub.Push(context.Background(), hub.PushInput{Config: raw, Format: config.FormatYAML, Labels: labels})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return res.Generation
}

func gateway(t *testing.T) *kongemu.Gateway {
	t.Helper()
	gw := kongemu.New()
	if _, err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	return gw
}

func kongSink(name, addr string, backoff time.Duration) *confighubv1.Sink {
	return &confighubv1.Sink{Name: name, Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: addr}},
		Options: &confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Initial: durationpb.New(backoff), Max: durationpb.New(backoff)}}}
}

// rowState is the selector of a sink's row in a state.
func rowState(name, state string) string {
	return fmt.Sprintf(`#sinks tr[data-sink=%q][data-state=%q]`, name, state)
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func waitFor(t *testing.T, ctx context.Context, what string, sels ...string) {
	t.Helper()
	for _, sel := range sels {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(sel)))
		cancel()
		if err != nil {
			body, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%s: %s never showed: %v\npage:\n%s", what, sel, err, body)
		}
	}
}

// badPort is a KIC golden configuration whose Service default/nginx became
// a Kong service on a port Kong refuses.
func badPort(t *testing.T) []byte {
	good := harness.Fixture(t, "httproute-example__default.yaml")
	bad := bytes.Replace(good, []byte("  port: 8080\n"), []byte("  port: 80800\n"), 1)
	if bytes.Equal(good, bad) {
		t.Fatal("the fixture has no service on port 8080 any more")
	}
	return bad
}

// TestPageFollowsApplyRejectAndBackoff: in a real browser, two Kong
// gateways (the Admin API emulator) turn APPLIED after a push; a
// configuration they reject shows the entity errors under the Kubernetes
// object of the k8s-* tags; a stopped gateway shows BACKOFF with a
// countdown to its next retry.
func TestPageFollowsApplyRejectAndBackoff(t *testing.T) {
	gwA, gwB := gateway(t), gateway(t)
	f := startHub(t, []*confighubv1.Sink{kongSink("gw-a", gwA.URL(), 30*time.Second), kongSink("gw-b", gwB.URL(), 30*time.Second)})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the sinks before any push", `#sinks tr[data-sink="gw-a"]`, `#sinks tr[data-sink="gw-b"]`)

	good := harness.Fixture(t, "httproute-example__default.yaml")
	gen := f.push(t, good, map[string]string{"commit": "4f2a9c1"})
	waitFor(t, ctx, "the push", rowState("gw-a", "APPLIED"), rowState("gw-b", "APPLIED"), fmt.Sprintf(`#gens tr[data-generation="%d"] td.converged`, gen))
	if s := text(t, ctx, `#sinks tr[data-sink="gw-a"] td.state`); s != "APPLIED" {
		t.Errorf("state cell %q, want the text APPLIED (not colour only)", s)
	}
	if s := text(t, ctx, "#labels"); !strings.Contains(s, "commit=4f2a9c1") {
		t.Errorf("current generation labels %q, want commit=4f2a9c1", s)
	}
	screenshot(t, ctx, "applied")

	f.push(t, badPort(t), nil)
	waitFor(t, ctx, "the rejected push", rowState("gw-a", "FAILED"), rowState("gw-b", "FAILED"), `#objects div.object[data-object="Service default/nginx"]`)
	obj := text(t, ctx, `#objects div.object[data-object="Service default/nginx"]`)
	for _, want := range []string{"Service default/nginx", "service httproute.default.httproute-testing.3", "port:", "gw-a, gw-b", "k8s-kind:Service"} {
		if !strings.Contains(obj, want) {
			t.Errorf("rejected object shows %q, want %q in it", obj, want)
		}
	}
	screenshot(t, ctx, "rejected")

	if err := gwB.Close(); err != nil {
		t.Fatal(err)
	}
	// A new configuration (the same one would be skipped: its hash is there).
	f.push(t, bytes.Replace(good, []byte("  port: 8080\n"), []byte("  port: 8081\n"), 1), map[string]string{"commit": "77e01bd"})
	waitFor(t, ctx, "the stopped gateway", rowState("gw-a", "APPLIED"), rowState("gw-b", "BACKOFF"))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#objects').children.length === 0`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("the rejection of the previous generation is still shown: %v", err)
	}
	countdown := regexp.MustCompile(`^in ([0-9]+)s$`)
	first := text(t, ctx, `#sinks tr[data-sink="gw-b"] td.retry`)
	m := countdown.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("next retry cell %q, want a countdown such as \"in 29s\"", first)
	}
	// The countdown moves on its own (no event in between).
	js := fmt.Sprintf(`document.querySelector('#sinks tr[data-sink="gw-b"] td.retry').textContent !== %q`, first)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("countdown stayed at %q: %v", first, err)
	}
	if s := text(t, ctx, `#sinks tr[data-sink="gw-b"] td.err`); !strings.Contains(s, "unreachable") {
		t.Errorf("last error %q, want the gateway unreachable", s)
	}
	screenshot(t, ctx, "backoff")
}

// TestThousandSinks: 1,000 sinks are loaded and rendered within 2 s of
// navigation, and one sink's state change shows within 1 s of the hub's
// event. The figures are logged (docs/operations.md quotes them).
func TestThousandSinks(t *testing.T) {
	const n = 1000
	seed := make([]*confighubv1.Sink, n)
	for i := range seed {
		seed[i] = &confighubv1.Sink{Name: fmt.Sprintf("edge-%04d", i), Kind: "fake", Spec: &confighubv1.Sink_Custom{}}
	}
	const slow = "edge-0500"
	f := startHubWith(t, seed, map[string]enginetest.Behavior{slow: {Block: true}})
	gen := f.push(t, []byte("_format_version: \"3.0\"\nservices: []\n"), map[string]string{"commit": "fleet"})
	var states map[string]int
	harness.Eventually(t, 30*time.Second, func() bool {
		st, err := f.hub.Status("")
		if err != nil {
			return false
		}
		states = map[string]int{}
		for _, s := range st.GetSinks() {
			states[fmt.Sprintf("%s@%d", s.GetState(), s.GetAppliedGeneration())]++
		}
		return states[fmt.Sprintf("SINK_STATE_APPLIED@%d", gen)] == n-1
	}, "%d sinks applied generation %d (states: %v)", n-1, gen, &states)

	ctx := browser(t)
	// Warm the browser up (first start of the renderer) outside the measure.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url)); err != nil {
		t.Fatal(err)
	}
	var firstMs string
	var err error
	for range 3 {
		// Right after a navigation the protocol may still name the old
		// page's JavaScript context; poll again in the new one.
		firstMs, err = chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`document.querySelectorAll('#sinks tbody tr').length === %d && document.documentElement.dataset.firstRenderMs`, n),
			chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
		if err == nil || !strings.Contains(err.Error(), "Cannot find context") {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	t.Logf("%d sinks: table rendered %s ms after navigation start (page's own clock); %v wall clock from Navigate to all rows", n, firstMs, wall.Round(time.Millisecond))
	// The bound is on what a user sees: navigation start to the rendered
	// table, by the page's clock (the wall clock adds chromedp's round trips).
	if ms, err := strconv.Atoi(firstMs); err != nil {
		t.Fatalf("first render %q: %v", firstMs, err)
	} else if raceEnabled {
		t.Logf("race detector on: the 2 s bound is checked by the run without it (make test runs both)")
	} else if ms > 2000 {
		t.Errorf("%d sinks took %d ms to load and render, want < 2000", n, ms)
	}
	waitFor(t, ctx, "the blocked sink", rowState(slow, "APPLYING"), rowState("edge-0999", "APPLIED"))

	// Note when the row changes, in the page, then let the sink finish.
	watch := f.hub.Watch(t.Context(), "", 0)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](fmt.Sprintf(`(() => {
		const row = document.querySelector('#sinks tr[data-sink=%q]');
		new MutationObserver((_, o) => { if (row.dataset.state === 'APPLIED') { window.changedAt = Date.now(); o.disconnect(); } })
			.observe(row, {attributes: true, attributeFilter: ['data-state']});
	})()`, slow))); err != nil {
		t.Fatal(err)
	}
	f.fleet.Sink(slow).ReleaseAll()
	var eventAt time.Time
	for ev := range watch {
		if s := ev.GetSink(); s.GetSink() == slow && s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED {
			eventAt = time.Now()
			break
		}
	}
	changedAt, err := chromedp.Run(ctx, chromedp.Poll[float64](`window.changedAt`, chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil {
		t.Fatalf("the row of %s never turned APPLIED: %v", slow, err)
	}
	lat := time.UnixMilli(int64(changedAt)).Sub(eventAt)
	t.Logf("state change of %s shown %v after the hub's event (1,000 rows on the page)", slow, lat.Round(time.Millisecond))
	if lat > time.Second && !raceEnabled {
		t.Errorf("state change took %v to show, want < 1s", lat)
	}
	screenshot(t, ctx, "thousand")
}

// TestTokenNeededBeforeAnything: with tokens, the page shows no stream,
// sink or state before a read token is entered; the token goes in a
// header (sessionStorage, never the URL); a push token is enough (roles
// imply the ones below), an unknown token is refused.
func TestTokenNeededBeforeAnything(t *testing.T) {
	tokens, err := auth.ParseTokens([]byte("s3cret-read-token read\ns3cret-push-token push\n"))
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway(t)
	f := startHub(t, []*confighubv1.Sink{kongSink("gw-private", gw.URL(), time.Second)}, statuspage.WithAuth(auth.New(tokens)))
	f.push(t, harness.Fixture(t, "httproute-example__default.yaml"), nil)

	res, err := http.Get(f.url + "api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API without a token: %s, want 401", res.Status)
	}

	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url), chromedp.WaitVisible(chromedp.CSS("#login"))); err != nil {
		t.Fatal(err)
	}
	body := text(t, ctx, "body")
	if strings.Contains(body, "gw-private") || strings.Contains(body, "default") {
		t.Fatalf("before a token the page shows %q", body)
	}
	screenshot(t, ctx, "token-needed")

	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "wrong-token"), chromedp.Click(chromedp.CSS(`#login button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#login-error').textContent.includes('unknown token')`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("an unknown token is not refused: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-read-token"), chromedp.Click(chromedp.CSS(`#login button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the read token", rowState("gw-private", "APPLIED"))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('confighub.token')`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "s3cret") || stored != "s3cret-read-token" {
		t.Fatalf("location %q, sessionStorage %q: want the token in sessionStorage only", loc, stored)
	}
	// A reload keeps the session's token.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reload", rowState("gw-private", "APPLIED"))
	screenshot(t, ctx, "token-given")
}

// TestPageShowsFallback: a gateway running a fallback (on_reject fallback)
// shows DEGRADED with its reason, and the excluded entities (the rejected
// service and the routes that depend on it) under their Kubernetes object.
func TestPageShowsFallback(t *testing.T) {
	gw := gateway(t)
	s := kongSink("gw-f", gw.URL(), 30*time.Second)
	s.GetKong().OnReject = confighubv1.OnReject_ON_REJECT_FALLBACK
	f := startHub(t, []*confighubv1.Sink{s})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url)); err != nil {
		t.Fatal(err)
	}
	f.push(t, badPort(t), nil)
	waitFor(t, ctx, "the fallback", rowState("gw-f", "DEGRADED"), `#objects div.object[data-object="Service default/nginx"]`)
	if s := text(t, ctx, `#sinks tr[data-sink="gw-f"] td.state`); !strings.Contains(s, "DEGRADED") || !strings.Contains(s, "fallback") {
		t.Errorf("state cell %q, want DEGRADED and why", s)
	}
	obj := text(t, ctx, `#objects`)
	for _, want := range []string{"excluded from the fallback", "depends on service", "excluded by gw-f"} {
		if !strings.Contains(obj, want) {
			t.Errorf("excluded entities show %q, want %q in it", obj, want)
		}
	}
	screenshot(t, ctx, "degraded")
}

// TestPageShowsGenerationDiffs: each row of the generations table says
// what became of its generation (converged, or rejected by N of M sinks
// when every gateway refused it, not "converging") and opens that
// generation's entity diff against the one before it; a changed password
// shows redacted.
func TestPageShowsGenerationDiffs(t *testing.T) {
	gwA, gwB := gateway(t), gateway(t)
	f := startHub(t, []*confighubv1.Sink{kongSink("gw-a", gwA.URL(), 30*time.Second), kongSink("gw-b", gwB.URL(), 30*time.Second)})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url)); err != nil {
		t.Fatal(err)
	}
	good := harness.Fixture(t, "httproute-example__default.yaml")
	g1 := f.push(t, good, nil)
	waitFor(t, ctx, "the first push", fmt.Sprintf(`#gens tr[data-generation="%d"] td.converged`, g1))
	g2 := f.push(t, badPort(t), nil)
	row := fmt.Sprintf(`#gens tr[data-generation="%d"]`, g2)
	waitFor(t, ctx, "the rejected push", rowState("gw-a", "FAILED"), rowState("gw-b", "FAILED"), row+" td.rejected")
	if s := text(t, ctx, row+" td.rejected"); s != "rejected by 2 of 2" {
		t.Errorf("outcome of the rejected generation %q, want \"rejected by 2 of 2\"", s)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+" button.open-diff"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the diff", `#diff li.change[data-action="update"]`)
	d := text(t, ctx, "#diff")
	for _, want := range []string{fmt.Sprintf("generation %d against generation %d: 0 created, 1 updated, 0 deleted", g2, g1),
		"updating service httproute.default.httproute-testing.3", "Service default/nginx", "port: 8080 \u2192 80800"} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff shows %q, want %q in it", d, want)
		}
	}
	screenshot(t, ctx, "diff")

	withPw := harness.Fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	f.push(t, withPw, nil)
	changed := bytes.Replace(withPw, []byte("consumer-1-password"), []byte("consumer-1-new-password"), 1)
	g4 := f.push(t, changed, nil)
	row = fmt.Sprintf(`#gens tr[data-generation="%d"]`, g4)
	waitFor(t, ctx, "the password change", row)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+" button.open-diff"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector('#diff-title').textContent.startsWith('generation %d against')`, g4), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the diff of generation %d never showed: %v", g4, err)
	}
	d = text(t, ctx, "#diff")
	if !strings.Contains(d, "password: \"<redacted>\" \u2192 \"<redacted>\"") {
		t.Errorf("the password change shows %q, want it redacted on both sides", d)
	}
	if strings.Contains(d, "consumer-1-") || strings.Contains(d, "PRIVATE KEY") {
		t.Errorf("a secret on the page: %q", d)
	}
}
