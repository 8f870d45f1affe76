package kongemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/test/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fixtureFiles(t testing.TB) []string { return harness.Fixtures(t) }

func start(t *testing.T, opts ...Option) (*Gateway, string) {
	t.Helper()
	g := New(opts...)
	u, err := g.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, u
}

func post(t *testing.T, u, query string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(u+"/config?"+query, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func status(t *testing.T, u string) map[string]any {
	t.Helper()
	resp, err := http.Get(u + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Every KIC golden output is accepted: a real Kong accepted them.
func TestFixturesAccepted(t *testing.T) {
	g, u := start(t)
	for _, f := range fixtureFiles(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		g.Restart() // some fixtures are identical: each one must load
		resp, body := post(t, u, "check_hash=1&flatten_errors=1", js)
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("%s: status %d, want 201: %s", filepath.Base(f), resp.StatusCode, body)
			continue
		}
		if got, want := g.Hash(), ConfigHash(raw); got != want || len(got) != 32 {
			t.Errorf("%s: hash %q, want %q", filepath.Base(f), got, want)
		}
		// Kong answers a 201 with the loaded entities (about the size of the
		// configuration); clients must cope with that answer.
		if !json.Valid(body) || ConfigHash(body) != g.Hash() {
			t.Errorf("%s: the 201 answer (%d bytes) is not the loaded configuration", filepath.Base(f), len(body))
		}
		if h := status(t, u)["configuration_hash"]; h != g.Hash() {
			t.Errorf("%s: /status hash %v, want %s", filepath.Base(f), h, g.Hash())
		}
	}
}

// Kong OSS does not know Enterprise entities: with WithOSS exactly the -ee
// fixtures are refused (unknown collections, a plugin that is not enabled),
// every other fixture is still accepted.
func TestOSSRejectsEnterpriseFixtures(t *testing.T) {
	g, u := start(t, WithOSS())
	for _, f := range fixtureFiles(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		g.Restart()
		resp, body := post(t, u, "flatten_errors=1", raw)
		ee := strings.Contains(filepath.Base(f), "-ee__")
		switch {
		case ee && resp.StatusCode != http.StatusBadRequest:
			t.Errorf("%s: %d, want 400 from Kong OSS", filepath.Base(f), resp.StatusCode)
		case ee:
			var eb ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil {
				t.Fatal(err)
			}
			_, cg := eb.Fields["consumer_groups"]
			_, dg := eb.Fields["degraphql_routes"]
			if !cg && !dg {
				t.Errorf("%s: fields %v name no Enterprise collection", filepath.Base(f), eb.Fields)
			}
		case resp.StatusCode != http.StatusCreated:
			t.Errorf("%s: %d %s, want 201", filepath.Base(f), resp.StatusCode, body)
		}
	}
}

func TestHashIndependentOfFormat(t *testing.T) {
	yml := []byte("_format_version: \"3.0\"\nservices:\n- name: a\n  host: example.com\n  port: 80\n")
	js := []byte(`{"services":[{"port":80,"host":"example.com","name":"a"}],"_format_version":"3.0"}`)
	if ConfigHash(yml) != ConfigHash(js) || ConfigHash(js) == "" {
		t.Fatalf("yaml %s json %s", ConfigHash(yml), ConfigHash(js))
	}
	if ConfigHash([]byte(`{"_format_version":"3.0","services":[]}`)) == ConfigHash(js) {
		t.Fatal("different configs, same hash")
	}
}

func TestCheckHash304(t *testing.T) {
	g, u := start(t)
	body := []byte(`{"_format_version":"3.0","services":[{"name":"a","host":"h"}]}`)
	if resp, b := post(t, u, "check_hash=1", body); resp.StatusCode != 201 {
		t.Fatalf("first: %d %s", resp.StatusCode, b)
	}
	if resp, _ := post(t, u, "check_hash=1", body); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("same hash: %d, want 304", resp.StatusCode)
	}
	// Without check_hash the config is loaded again.
	if resp, _ := post(t, u, "", body); resp.StatusCode != 201 {
		t.Fatalf("no check_hash: %d, want 201", resp.StatusCode)
	}
	if g.Loads() != 2 || g.Pushes() != 3 {
		t.Fatalf("loads %d pushes %d, want 2 and 3", g.Loads(), g.Pushes())
	}
}

// TestBrokenReferences: dangling references answer Kong 3.9.1's shapes.
// They are keyed by the entity's name or id (validate_references), so
// flatten_errors places none of them: those of a collection given as a
// top-level list are dropped (fields {}, flattened_errors {}), those of a
// collection given only nested stay in fields. Without flatten_errors,
// fields holds them all.
func TestBrokenReferences(t *testing.T) {
	g, u := start(t)
	good := []byte(`{"_format_version":"3.0","services":[{"name":"a","host":"h"}]}`)
	post(t, u, "", good)
	before := g.Hash()
	bad := []byte(`{"_format_version":"3.0",
	  "services":[{"name":"a","host":"h","routes":[{"name":"r1","paths":["/"]}]}],
	  "routes":[{"name":"r2","service":"missing","paths":["/x"],"tags":["k8s-name:r2","k8s-namespace:ns"]}],
	  "plugins":[{"name":"key-auth","route":"nope","id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a11","tags":["k8s-name:p","k8s-kind:KongPlugin"]}]}`)
	resp, body := post(t, u, "check_hash=1&flatten_errors=1", bad)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
	}
	want := `{"name":"invalid declarative configuration","code":14,"message":"declarative config is invalid: {}","fields":{},"flattened_errors":{}}`
	if strings.TrimSpace(string(body)) != want {
		t.Fatalf("flattened answer\n%s\nwant Kong 3.9.1's\n%s", body, want)
	}
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Code != 14 || eb.FlattenedErrors != nil {
		t.Fatalf("ErrorBody reads {} as no flattened errors: %v %+v", err, eb)
	}
	if g.Hash() != before {
		t.Fatal("a rejected config changed the hash")
	}
	_, body = post(t, u, "", bad)
	var nested struct {
		Message string         `json:"message"`
		Fields  map[string]any `json:"fields"`
		Flat    any            `json:"flattened_errors"`
	}
	_ = json.Unmarshal(body, &nested)
	wantFields := `{"plugins":{"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a11":["invalid reference 'route: nope' (no such entry in 'routes')"]},` +
		`"routes":{"r2":["invalid reference 'service: missing' (no such entry in 'services')"]}}`
	if got, _ := json.Marshal(nested.Fields); string(got) != wantFields || nested.Flat != nil ||
		!strings.Contains(nested.Message, `routes={r2={"invalid reference 'service: missing' (no such entry in 'services')"}}`) {
		t.Fatalf("unflattened answer %s", body)
	}

	// A plugin given only nested keeps its reference error in fields.
	nestedOnly := []byte(`{"_format_version":"3.0","services":[{"name":"a","host":"h","plugins":[
	  {"name":"cors","id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a12","consumer":{"id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a13"}}]}]}`)
	_, body = post(t, u, "flatten_errors=1", nestedOnly)
	wantNested := `{"name":"invalid declarative configuration","code":14,"message":"declarative config is invalid: ` +
		`{plugins={[\"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a12\"]={\"invalid reference 'consumer: {\\\"id\\\":\\\"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a13\\\"}' (no such entry in 'consumers')\"}}}",` +
		`"fields":{"plugins":{"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a12":["invalid reference 'consumer: {\"id\":\"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a13\"}' (no such entry in 'consumers')"]}},"flattened_errors":{}}`
	if strings.TrimSpace(string(body)) != wantNested {
		t.Fatalf("nested-only answer\n%s\nwant\n%s", body, wantNested)
	}
}

func TestFieldRules(t *testing.T) {
	_, u := start(t)
	cases := []struct {
		name, body, typ, want string
	}{
		{"service without host", `{"services":[{"name":"s"}]}`, "service", "host: required field missing"},
		{"bad protocol", `{"services":[{"name":"s","host":"h","protocol":"ftp"}]}`, "service", "protocol: expected one of"},
		{"port range", `{"services":[{"name":"s","host":"h","port":70000}]}`, "service", "port: value should be between 0 and 65535"},
		{"route without matcher", `{"services":[{"name":"s","host":"h","routes":[{"name":"r"}]}]}`, "route", "must set one of 'methods', 'hosts', 'headers', 'paths'"},
		{"tcp route", `{"services":[{"name":"s","host":"h","protocol":"tcp","routes":[{"name":"r","protocols":["tcp"]}]}]}`, "route", "'sources', 'destinations', 'snis'"},
		{"duplicate names", `{"services":[{"name":"s","host":"h"},{"name":"s","host":"g"}]}`, "service", "uniqueness violation"},
		{"unknown field", `{"services":[{"name":"s","host":"h","colour":"red"}]}`, "service", "colour: unknown field"},
		{"bad id", `{"services":[{"name":"s","host":"h","id":"x"}]}`, "service", "id: expected a valid UUID"},
		{"unknown plugin", `{"plugins":[{"name":"nope"}]}`, "plugin", "plugin 'nope' not enabled"},
		{"same plugin twice on a route", `{"services":[{"name":"s","host":"h","routes":[{"name":"r","paths":["/"],"plugins":[{"name":"cors"},{"name":"cors"}]}]}]}`, "plugin", "uniqueness violation: 'plugins' entity with primary key set to '"},
		{"consumer without name", `{"consumers":[{"tags":["a"]}]}`, "consumer", "custom_id"},
	}
	for _, c := range cases {
		body := `{"_format_version":"3.0",` + c.body[1:]
		resp, b := post(t, u, "flatten_errors=1", []byte(body))
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", c.name, resp.StatusCode)
			continue
		}
		var eb ErrorBody
		_ = json.Unmarshal(b, &eb)
		found := false
		for _, f := range eb.FlattenedErrors {
			for _, e := range f.Errors {
				s := e.Message
				if e.Field != "" {
					s = e.Field + ": " + e.Message
				}
				if f.EntityType == c.typ && strings.Contains(s, c.want) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s: want %s error %q in %s", c.name, c.typ, c.want, b)
		}
	}
	for _, c := range []struct{ name, body, want string }{
		{"no format version", `{"services":[]}`, "expected a declarative configuration"},
		{"bad format version", `{"_format_version":"9.9"}`, "_format_version"},
		{"not json", `{"_format_version":`, "failed parsing"},
		{"unknown collection", `{"_format_version":"3.0","widgets":[]}`, "widgets"},
	} {
		resp, b := post(t, u, "flatten_errors=1", []byte(c.body))
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.name, resp.StatusCode, b, c.want)
		}
	}
}

func TestConfigFieldAndForm(t *testing.T) {
	g, u := start(t)
	cfg := "_format_version: \"3.0\"\nservices:\n- name: a\n  host: h\n"
	js, _ := json.Marshal(map[string]string{"config": cfg})
	if resp, b := post(t, u, "", js); resp.StatusCode != 201 {
		t.Fatalf("config field: %d %s", resp.StatusCode, b)
	}
	if g.Hash() != ConfigHash([]byte(cfg)) {
		t.Fatal("hash of config field")
	}
	g.Restart()
	resp, err := http.PostForm(u+"/config", url.Values{"config": {cfg}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || g.Hash() != ConfigHash([]byte(cfg)) {
		t.Fatalf("form: %d", resp.StatusCode)
	}
}

func TestStatusRootAndRestart(t *testing.T) {
	g, u := start(t)
	if h := status(t, u)["configuration_hash"]; h != EmptyHash {
		t.Fatalf("empty hash %v", h)
	}
	post(t, u, "", []byte(`{"_format_version":"3.0"}`))
	if h := status(t, u)["configuration_hash"]; h == EmptyHash {
		t.Fatal("hash stayed empty after a load")
	}
	g.Restart()
	st := status(t, u)
	if st["configuration_hash"] != EmptyHash || st["server"].(map[string]any)["total_requests"].(float64) < 3 {
		t.Fatalf("after restart %v", st)
	}
	resp, err := http.Get(u + "/")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&root)
	resp.Body.Close()
	if v, _ := root["version"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("version %v", root["version"])
	}
}

func TestDBMode(t *testing.T) {
	_, u := start(t, WithDBMode())
	resp, b := post(t, u, "", []byte(`{"_format_version":"3.0"}`))
	if resp.StatusCode != 400 || !strings.Contains(string(b), "only available when Kong is configured to not use a database") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if _, ok := status(t, u)["configuration_hash"]; ok {
		t.Fatal("DB mode /status has a configuration_hash")
	}
}

func TestScriptedStatuses(t *testing.T) {
	g, u := start(t)
	g.ScriptConfig(Step{Status: 429, RetryAfter: "7"}, Step{Status: 503}, Step{})
	body := []byte(`{"_format_version":"3.0"}`)
	resp, b := post(t, u, "", body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(b), "Currently loading previous configuration") {
		t.Fatalf("first: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if resp, _ := post(t, u, "", body); resp.StatusCode != 503 {
		t.Fatalf("second: %d", resp.StatusCode)
	}
	// /status is not scripted.
	if status(t, u)["configuration_hash"] != EmptyHash {
		t.Fatal("status")
	}
	for i := 0; i < 2; i++ { // the empty step, then normal again
		if resp, _ := post(t, u, "", body); resp.StatusCode != 201 {
			t.Fatalf("after script: %d", resp.StatusCode)
		}
	}
	got := []int{}
	for _, r := range g.Requests() {
		if r.Path == "/config" {
			got = append(got, r.Status)
		}
	}
	if len(got) != 4 || got[0] != 429 || got[1] != 503 || got[2] != 201 {
		t.Fatalf("log statuses %v", got)
	}
}

func TestBodyLimit413(t *testing.T) {
	g, u := start(t, WithBodyLimit(64))
	big := []byte(`{"_format_version":"3.0","services":[{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","host":"h"}]}`)
	resp, _ := post(t, u, "", big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d, want 413", resp.StatusCode)
	}
	if g.Hash() != EmptyHash {
		t.Fatal("a 413 changed the config")
	}
	g.SetBodyLimit(0)
	if resp, _ := post(t, u, "", big); resp.StatusCode != 201 {
		t.Fatalf("%d without limit", resp.StatusCode)
	}
}

func TestDropConnection(t *testing.T) {
	g, u := start(t)
	// A client of its own, one connection per request: no pooled
	// connection shared with other tests (a stale one, to a port an
	// earlier gateway had, would fail or take the drop meant for this one).
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	body := func() io.Reader { return strings.NewReader(`{"_format_version":"3.0"}`) }
	g.DropNext(1)
	if _, err := c.Post(u+"/config", "application/json", body()); err == nil {
		t.Fatal("dropped request succeeded")
	}
	resp, err := c.Post(u+"/config", "application/json", body())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("next request %d", resp.StatusCode)
	}
	// Both requests are logged before their answers leave.
	reqs := g.Requests()
	if len(reqs) != 2 || !reqs[0].Dropped || reqs[0].Status != 0 || reqs[1].Status != http.StatusCreated {
		t.Fatalf("log %+v, want the dropped request then a 201", reqs)
	}
}

func TestHangUntilReleaseOrClientLeaves(t *testing.T) {
	g, u := start(t)
	g.Hang()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A client that gives up ends its hung request.
	cctx, ccancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(cctx, "GET", u+"/status", nil)
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	if err := g.WaitHanging(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ccancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
	if err := g.Wait(ctx, func(v View) bool { return v.Hanging == 0 }); err != nil {
		t.Fatal(err)
	}

	// Release lets a hung request through.
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(u+"/config", "application/json", strings.NewReader(`{"_format_version":"3.0"}`))
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	if err := g.WaitHanging(ctx, 1); err != nil {
		t.Fatal(err)
	}
	g.Release()
	if code := <-done; code != 201 {
		t.Fatalf("released request: %d", code)
	}
}

func TestLatencyUsesClock(t *testing.T) {
	clk := clockwork.NewFakeClock()
	g, u := start(t, WithClock(clk))
	g.SetLatency(time.Minute)
	done := make(chan int, 1)
	go func() {
		resp, err := http.Get(u + "/status")
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("answered before the latency elapsed")
	default:
	}
	clk.Advance(time.Minute)
	if code := <-done; code != 200 {
		t.Fatalf("%d", code)
	}
}

func TestControlAPI(t *testing.T) {
	g, u := start(t)
	spec := `{"script":{"method":"POST","path":"/config","steps":[{"status":429,"retry_after":"3"}]},"latency":"0s"}`
	resp, err := http.Post(u+"/_emulator/faults", "application/json", strings.NewReader(spec))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("faults: %v %v", err, resp)
	}
	resp.Body.Close()
	if r, _ := post(t, u, "", []byte(`{"_format_version":"3.0"}`)); r.StatusCode != 429 || r.Header.Get("Retry-After") != "3" {
		t.Fatalf("scripted over HTTP: %d", r.StatusCode)
	}
	post(t, u, "", []byte(`{"_format_version":"3.0"}`))
	resp, _ = http.Post(u+"/_emulator/restart", "", nil)
	resp.Body.Close()
	resp, _ = http.Get(u + "/_emulator/state")
	var st State
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Hash != EmptyHash || st.Pushes != 2 || st.Loads != 1 || st.Restarts != 1 {
		t.Fatalf("state %+v", st)
	}
	if g.Count("", "/_emulator/state") != 0 {
		t.Fatal("control calls are logged")
	}
}

func TestSharedCache(t *testing.T) {
	c := NewCache()
	a, ua := start(t, WithCache(c))
	b, ub := start(t, WithCache(c))
	body := []byte(`{"_format_version":"3.0","services":[{"name":"a","host":"h"}]}`)
	post(t, ua, "", body)
	post(t, ub, "", body)
	if a.Hash() != b.Hash() || a.Hash() != ConfigHash(body) {
		t.Fatal("hashes differ")
	}
	if &a.Config()[0] != &b.Config()[0] {
		t.Fatal("the cache did not share the loaded bytes")
	}
}

func BenchmarkCheckFixture(b *testing.B) {
	raw := harness.Fixture(b, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	js, _ := yaml.YAMLToJSON(raw)
	b.SetBytes(int64(len(js)))
	b.ReportAllocs()
	for b.Loop() {
		if r := parseAndCheck(js, checkOptions{}); r.Invalid != nil {
			b.Fatal(r.Invalid.Message)
		}
	}
}

func BenchmarkCheckAllFixtures(b *testing.B) {
	var bodies [][]byte
	var n int64
	for _, f := range fixtureFiles(b) {
		raw, _ := os.ReadFile(f)
		js, _ := yaml.YAMLToJSON(raw)
		bodies = append(bodies, js)
		n += int64(len(js))
	}
	b.SetBytes(n)
	for b.Loop() {
		for _, js := range bodies {
			parseAndCheck(js, checkOptions{})
		}
	}
}

// TestEntityErrorShapes: the entity errors a controller's configuration
// can hold answer flatten_errors=1 with Kong 3.9.1's flattened entries: a
// plugin config field the plugin's schema does not have, and a duplicate
// name (an entity error on the second entity).
func TestEntityErrorShapes(t *testing.T) {
	_, u := start(t)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"plugin with an unknown config field", `{"_format_version":"3.0","services":[{"name":"a","host":"h","plugins":[
		  {"name":"correlation-id","id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a11","tags":["k8s-name:p"],"config":{"header_name":"X","colour":"red"}}]}]}`,
			`[{"entity_type":"plugin","entity_id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a11","entity_tags":["k8s-name:p"],` +
				`"entity":{"config":{"colour":"red","header_name":"X"},"id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a11","name":"correlation-id","tags":["k8s-name:p"]},` +
				`"errors":[{"type":"field","field":"config.colour","message":"unknown field"}]}]`},
		{"duplicate service name", `{"_format_version":"3.0","services":[{"name":"a","host":"h","tags":["k8s-name:one"]},{"name":"a","host":"h2","tags":["k8s-name:two"]}]}`,
			`[{"entity_type":"service","entity_name":"a","entity_tags":["k8s-name:two"],"entity":{"host":"h2","name":"a","tags":["k8s-name:two"]},` +
				`"errors":[{"type":"entity","message":"uniqueness violation: 'services' entity with name set to 'a' already declared"}]}]`},
	} {
		resp, body := post(t, u, "flatten_errors=1", []byte(tc.body))
		var got struct {
			Message string          `json:"message"`
			Flat    json.RawMessage `json:"flattened_errors"`
		}
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 400 {
			t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
		if string(got.Flat) != tc.want || got.Message != "declarative config is invalid: {}" {
			t.Errorf("%s:\n%s\nwant flattened_errors\n%s\nand message \"declarative config is invalid: {}\"", tc.name, body, tc.want)
		}
	}
}

// TestPluginsWithOwnIDsShareAScope: Kong 3.9's declarative validation
// checks plugin uniqueness through the id it derives from the cache key;
// two plugins of one name and scope with their own ids load.
func TestPluginsWithOwnIDsShareAScope(t *testing.T) {
	_, u := start(t)
	body := []byte(`{"_format_version":"3.0","services":[{"name":"s","host":"h","plugins":[
	  {"name":"cors","id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a11"},{"name":"cors","id":"5e9c3c4e-1b0c-4f0e-9c43-7a0b2f3d9a12"}]}]}`)
	if resp, b := post(t, u, "flatten_errors=1", body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s, want 201", resp.StatusCode, b)
	}
}
