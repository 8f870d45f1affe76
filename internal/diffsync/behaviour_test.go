package diffsync

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/kongemu"
)

// changeFirstRoute returns raw with the first route of the first service
// given a new path.
func changeFirstRoute(t testing.TB, raw []byte) []byte {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	svc := root["services"].([]any)[0].(map[string]any)
	rt := svc["routes"].([]any)[0].(map[string]any)
	rt["paths"] = []any{"/changed-by-test"}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bigConfig is a KIC-like configuration of n services, each with 3 routes,
// a plugin, and an upstream with 2 targets.
func bigConfig(n int) []byte {
	var svcs, ups []any
	for i := range n {
		tags := []any{fmt.Sprintf("k8s-name:svc-%d", i), "k8s-namespace:default", "k8s-kind:Service", "k8s-version:v1"}
		var routes []any
		for j := range 3 {
			routes = append(routes, map[string]any{
				"name": fmt.Sprintf("default.ing-%d.svc-%d.%d", i, i, j), "paths": []any{fmt.Sprintf("/s%d/r%d", i, j)},
				"hosts": []any{"example.com"}, "strip_path": false, "preserve_host": true, "protocols": []any{"http", "https"},
				"tags": []any{fmt.Sprintf("k8s-name:ing-%d", i), "k8s-namespace:default", "k8s-kind:Ingress"},
			})
		}
		svcs = append(svcs, map[string]any{
			"name": fmt.Sprintf("default.svc-%d.80", i), "host": fmt.Sprintf("svc-%d.default.80.svc", i), "port": 80,
			"protocol": "http", "retries": 5, "tags": tags, "routes": routes,
			"plugins": []any{map[string]any{"name": "correlation-id", "config": map[string]any{"header_name": "X-Id"}, "tags": tags}},
		})
		ups = append(ups, map[string]any{
			"name": fmt.Sprintf("svc-%d.default.80.svc", i), "algorithm": "round-robin", "tags": tags,
			"targets": []any{
				map[string]any{"target": fmt.Sprintf("10.0.%d.1:80", i), "weight": 100},
				map[string]any{"target": fmt.Sprintf("10.0.%d.2:80", i), "weight": 100},
			},
		})
	}
	b, err := json.Marshal(map[string]any{"_format_version": "3.0", "services": svcs, "upstreams": ups})
	if err != nil {
		panic(err)
	}
	return b
}

func writeCounts(api *kongemu.EntityAPI) (writes int, gets int, summary string) {
	var parts []string
	for k, v := range api.Counts() {
		if strings.HasPrefix(k, "GET ") {
			gets += v
		} else {
			writes += v
		}
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return writes, gets, strings.Join(parts, " ")
}

// TestOneRouteChangeSendsOnlyItsWrites: a one-route change against a synced
// configuration sends one write, not a re-upload.
func TestOneRouteChangeSendsOnlyItsWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"fixture httproute-example__default.yaml", mustJSON(t, fixture(t, "httproute-example__default.yaml"))},
		{"synthetic 20 services", bigConfig(20)},
	} {
		for _, konnect := range []bool{false, true} {
			mode := "kong-db"
			if konnect {
				mode = "konnect"
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				e := newEnv(t)
				base, cp, opts := e.url, "", Options{}
				if konnect {
					cp = "cp-1"
					base = e.url + kongemu.KonnectPrefix + cp
					opts.ControlPlane, opts.Concurrency = cp, 4
				}
				s := e.syncer(t, base, opts)
				first, err := s.Sync(ctxT(t), loadConfig(t, tc.raw, 1))
				if err != nil {
					t.Fatal(err)
				}
				fw, fg, _ := writeCounts(e.api)
				total := e.api.Len(cp)

				e.api.ResetCounts()
				changed := changeFirstRoute(t, tc.raw)
				res, err := s.Sync(ctxT(t), loadConfig(t, changed, 2))
				if err != nil {
					t.Fatal(err)
				}
				w, g, summary := writeCounts(e.api)
				t.Logf("%s: first sync %d entities, %d writes, %d reads (%+v); one-route change: %d writes, %d reads: %s; writes: %v",
					mode, total, fw, fg, first, w, g, summary, e.api.Writes())
				if w != 1 || res != (Result{Updated: 1}) || e.api.Counts()["PUT routes"] != 1 {
					t.Errorf("one-route change sent %d writes (%+v), want 1 PUT routes", w, res)
				}
				assertMirrors(t, e.api, cp, changed)
			})
		}
	}
}

func mustJSON(t *testing.T, raw []byte) []byte {
	t.Helper()
	js, err := loadConfig(t, raw, 1).JSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestDropConsumers: consumers, their credentials and consumer plugins
// stay out; consumers already there are removed (KIC's behaviour).
func TestDropConsumers(t *testing.T) {
	name := "ingress-v1-rule-with-tls-and-consumer__default.yaml"
	e := newEnv(t)
	base := e.url + kongemu.KonnectPrefix + "cp-1"
	cfg := loadConfig(t, fixture(t, name), 1)
	full := e.syncer(t, base, Options{ControlPlane: "cp-1"})
	if _, err := full.Sync(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	if len(e.api.Entities("cp-1", "consumers")) == 0 || len(e.api.Entities("cp-1", "basic-auths")) == 0 {
		t.Fatal("fixture should create consumers and basic-auths without the option")
	}

	drop := e.syncer(t, base, Options{ControlPlane: "cp-1", DropConsumers: true})
	if _, err := drop.Sync(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"consumers", "key-auths", "basic-auths", "acls", "jwts", "hmac-auths"} {
		if n := len(e.api.Entities("cp-1", c)); n != 0 {
			t.Errorf("%s: %d left with drop consumers", c, n)
		}
	}
	for _, p := range e.api.Entities("cp-1", "plugins") {
		if _, ok := p["consumer"]; ok {
			t.Errorf("consumer plugin left: %v", p)
		}
	}
	if len(e.api.Entities("cp-1", "services")) == 0 || len(e.api.Entities("cp-1", "routes")) == 0 {
		t.Error("drop consumers removed services or routes")
	}

	// From empty: no consumer request is written at all.
	e2 := newEnv(t)
	s2 := e2.syncer(t, e2.url+kongemu.KonnectPrefix+"cp-2", Options{ControlPlane: "cp-2", DropConsumers: true})
	if _, err := s2.Sync(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	for k := range e2.api.Counts() {
		if !strings.HasPrefix(k, "GET") && (strings.Contains(k, "consumer") || strings.Contains(k, "auth")) {
			t.Errorf("drop consumers wrote %s", k)
		}
	}
}

// TestRateLimitedCarriesRetryAfter: a 429 storm answers every attempt with
// a retryable error carrying the server's Retry-After, until it ends.
// The engine waits RetryAfter between attempts (checked here on a counter
// of the waits the engine would do, not on wall time).
func TestRateLimitedCarriesRetryAfter(t *testing.T) {
	e := newEnv(t)
	s := e.syncer(t, e.url+kongemu.KonnectPrefix+"cp", Options{ControlPlane: "cp"})
	cfg := loadConfig(t, fixture(t, "httproute-example__default.yaml"), 1)

	// The storm answers the services listing of each of the first attempts
	// with 429 (matching one collection keeps a late request of an earlier,
	// abandoned attempt from taking the fault).
	const storm = 3
	var waited time.Duration
	attempts := 0
	for attempts < 10 {
		attempts++
		if attempts <= storm {
			e.api.PushFaults(kongemu.EntityFault{Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second, Collection: "services"})
		}
		_, err := s.Sync(ctxT(t), cfg)
		if err == nil {
			break
		}
		se, ok := sink.AsError(err)
		if !ok || se.Permanent || se.RetryAfter != 7*time.Second || se.Code != "rate-limited" {
			t.Fatalf("attempt %d: error %#v, want retryable rate-limited with RetryAfter 7s", attempts, err)
		}
		waited += se.RetryAfter
	}
	if attempts != storm+1 || waited != storm*7*time.Second {
		t.Errorf("converged after %d attempts and %v of Retry-After, want %d and %v", attempts, waited, storm+1, storm*7*time.Second)
	}

	// A 429 on an entity write is reported with the entity and the wait.
	e.api.PushFaults(kongemu.EntityFault{Status: http.StatusTooManyRequests, RetryAfter: 12 * time.Second, WritesOnly: true})
	_, err := s.Sync(ctxT(t), loadConfig(t, changeFirstRoute(t, mustJSON(t, fixture(t, "httproute-example__default.yaml"))), 2))
	se, ok := sink.AsError(err)
	if !ok || se.Permanent || se.RetryAfter != 12*time.Second || len(se.EntityErrors) != 1 {
		t.Fatalf("write 429: %#v, want retryable RetryAfter 12s with one entity error", err)
	}
}

// TestRejectedEntityIsPermanentWithTags: a 4xx on one entity pins the
// configuration and names the entity with its k8s tags.
func TestRejectedEntityIsPermanentWithTags(t *testing.T) {
	e := newEnv(t)
	s := e.syncer(t, e.url, Options{})
	raw := mustJSON(t, fixture(t, "ingress-v1-single-service-in-multiple-ingresses__default.yaml"))
	route := "foo-namespace.foo-2.foo-svc.example.com.80"
	e.api.RejectEntity("routes", route, http.StatusBadRequest, "schema violation (paths: invalid)")
	_, err := s.Sync(ctxT(t), loadConfig(t, raw, 1))
	se, ok := sink.AsError(err)
	if !ok || !se.Permanent || se.Code != "rejected" {
		t.Fatalf("error %#v, want permanent rejected", err)
	}
	if len(se.EntityErrors) != 1 {
		t.Fatalf("entity errors %v, want one", se.EntityErrors)
	}
	ee := se.EntityErrors[0]
	if ee.EntityType != "route" || ee.EntityName != route || ee.EntityId != "ab6b1505-ec86-5b04-9d39-a95a711564cc" ||
		!contains(ee.EntityTags, "k8s-name:foo-2") || !strings.Contains(ee.Errors[0].Message, "schema violation") {
		t.Errorf("entity error %v lacks the route's kind, name, id, tags or message", ee)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestUnavailableIsRetryable: 503, dropped connections and refused
// credentials are retried by the engine, never pinned.
func TestUnavailableIsRetryable(t *testing.T) {
	for _, f := range []kongemu.EntityFault{{Status: http.StatusServiceUnavailable}, {Drop: true}, {Status: http.StatusUnauthorized}} {
		e := newEnv(t)
		s := e.syncer(t, e.url, Options{})
		e.api.PushFaults(f)
		_, err := s.Sync(ctxT(t), loadConfig(t, fixture(t, "httproute-example__default.yaml"), 1))
		se, ok := sink.AsError(err)
		want := sink.CodeUnavailable
		if f.Status == http.StatusUnauthorized {
			want = sink.CodeUnauthorized
		}
		if !ok || se.Permanent || se.Code != want {
			t.Errorf("fault %+v: error %#v, want retryable unavailable", f, err)
		}
	}
}

// TestTemplatesAreLiteral: deck's ${{ env }} templating does not apply; the
// content is synced as written and the hub's environment is not read.
func TestTemplatesAreLiteral(t *testing.T) {
	t.Setenv("DECK_SECRET", "leaked")
	msg := `${{ env "DECK_SECRET" }} and {{ x }}`
	raw := []byte(`{"_format_version":"3.0","services":[{"name":"s","host":"h","port":80,"protocol":"http",` +
		`"plugins":[{"name":"request-termination","config":{"message":` + mustMarshal(msg) + `}}]}]}`)
	e := newEnv(t)
	s := e.syncer(t, e.url, Options{})
	if _, err := s.Sync(ctxT(t), loadConfig(t, raw, 1)); err != nil {
		t.Fatal(err)
	}
	ps := e.api.Entities("", "plugins")
	if len(ps) != 1 || ps[0]["config"].(map[string]any)["message"] != msg {
		t.Fatalf("plugin config %v, want the literal message %q", ps, msg)
	}
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
