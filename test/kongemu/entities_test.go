package kongemu

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type entityClient struct {
	t   *testing.T
	url string
}

func newEntityServer(t *testing.T, opts ...EntityOption) (*EntityAPI, *entityClient) {
	t.Helper()
	api := NewEntityAPI(opts...)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, &entityClient{t: t, url: srv.URL}
}

func (c *entityClient) do(method, path string, body any) (int, map[string]any, http.Header) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			c.t.Fatalf("%s %s: body %q is not JSON", method, path, b)
		}
	}
	return resp.StatusCode, out, resp.Header
}

func uuidN(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// TestEntityPagination: Kong's size/offset/next paging walks every entity
// once, in id order.
func TestEntityPagination(t *testing.T) {
	_, c := newEntityServer(t)
	for i := range 25 {
		if st, _, _ := c.do("PUT", "/services/"+uuidN(i), map[string]any{"name": fmt.Sprintf("s%d", i), "host": "h"}); st != 200 {
			t.Fatalf("PUT service %d: %d", i, st)
		}
	}
	seen := map[string]bool{}
	path := "/services?size=10"
	pages := 0
	for path != "" && pages < 10 {
		pages++
		st, body, _ := c.do("GET", path, nil)
		if st != 200 {
			t.Fatalf("GET %s: %d", path, st)
		}
		for _, d := range body["data"].([]any) {
			id := d.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("id %s listed twice", id)
			}
			seen[id] = true
		}
		next, _ := body["next"].(string)
		if next != "" && body["offset"] == nil {
			t.Fatal("next without offset")
		}
		path = next
	}
	if pages != 3 || len(seen) != 25 {
		t.Errorf("%d pages, %d entities; want 3 pages of 25", pages, len(seen))
	}
	for _, bad := range []string{"0", "1001", "x"} {
		if st, body, _ := c.do("GET", "/services?size="+bad, nil); st != 400 || !strings.Contains(fmt.Sprint(body["message"]), "size") {
			t.Errorf("size=%s: %d %v, want 400 about size", bad, st, body)
		}
	}
}

// TestEntityReferencesAndUniqueness: foreign keys must exist, names are
// unique, nested paths set the parent, deletes cascade (except a service
// still used by routes).
func TestEntityReferencesAndUniqueness(t *testing.T) {
	api, c := newEntityServer(t)
	svc, rt, cons, cred := uuidN(1), uuidN(2), uuidN(3), uuidN(4)
	if st, body, _ := c.do("PUT", "/routes/"+rt, map[string]any{"name": "r", "paths": []any{"/"}, "service": map[string]any{"id": svc}}); st != 400 ||
		body["name"] != "foreign key violation" {
		t.Errorf("route to a missing service: %d %v", st, body)
	}
	c.do("PUT", "/services/"+svc, map[string]any{"name": "s", "host": "h"})
	if st, _, _ := c.do("PUT", "/services/"+uuidN(9), map[string]any{"name": "s", "host": "h"}); st != 409 {
		t.Errorf("duplicate service name: %d, want 409", st)
	}
	if st, _, _ := c.do("PUT", "/routes/"+rt, map[string]any{"name": "r", "paths": []any{"/"}, "service": map[string]any{"id": svc}}); st != 200 {
		t.Fatalf("route: %d", st)
	}
	c.do("PUT", "/consumers/"+cons, map[string]any{"username": "u"})
	if st, body, _ := c.do("PUT", "/consumers/u/key-auth/"+cred, map[string]any{"key": "k"}); st != 200 || refID(body["consumer"]) != cons {
		t.Fatalf("nested key-auth by consumer username: %d %v", st, body)
	}
	if st, body, _ := c.do("GET", "/consumers/"+cons+"/key-auth", nil); st != 200 || len(body["data"].([]any)) != 1 {
		t.Errorf("nested list: %d %v", st, body)
	}
	if st, body, _ := c.do("GET", "/key-auths?size=1000", nil); st != 200 || len(body["data"].([]any)) != 1 {
		t.Errorf("top-level credential list: %d %v", st, body)
	}
	if st, _, _ := c.do("DELETE", "/services/"+svc, nil); st != 400 {
		t.Errorf("deleting a service with routes: %d, want 400", st)
	}
	if st, _, _ := c.do("DELETE", "/consumers/"+cons, nil); st != 204 {
		t.Errorf("delete consumer: %d", st)
	}
	if n := len(api.Entities("", "key-auths")); n != 0 {
		t.Errorf("credential survived its consumer: %d", n)
	}
	if st, body, _ := c.do("PATCH", "/routes/"+rt, map[string]any{"paths": []any{"/x"}}); st != 200 || body["name"] != "r" {
		t.Errorf("PATCH keeps other fields: %d %v", st, body)
	}
	counts := api.Counts()
	if counts["PUT routes"] != 2 || counts["DELETE consumers"] != 1 || counts["GET key-auths"] != 2 {
		t.Errorf("counts %v", counts)
	}
}

// TestEntityKonnectScopes: each control plane and the DB-mode root hold
// their own entities; schemas answer as the reconciler expects.
func TestEntityKonnectScopes(t *testing.T) {
	api, c := newEntityServer(t)
	c.do("PUT", KonnectPrefix+"cp-a/services/"+uuidN(1), map[string]any{"name": "a", "host": "h"})
	c.do("PUT", KonnectPrefix+"cp-b/services/"+uuidN(2), map[string]any{"name": "b", "host": "h"})
	if len(api.Entities("cp-a", "services")) != 1 || len(api.Entities("cp-b", "services")) != 1 || api.Len("") != 0 {
		t.Errorf("scopes mixed: a=%v b=%v root=%d", api.Entities("cp-a", "services"), api.Entities("cp-b", "services"), api.Len(""))
	}
	if st, body, _ := c.do("GET", KonnectPrefix+"cp-a/schemas/plugins/cors", nil); st != 200 || body["fields"] == nil {
		t.Errorf("plugin schema: %d %v", st, body)
	}
	if st, body, _ := c.do("GET", KonnectPrefix+"cp-a/schemas/plugins/anything", nil); st != 404 || body["message"] != "No plugin named 'anything'" {
		t.Errorf("unknown plugin schema: %d %v, want Kong's 404", st, body)
	}
	if st, body, _ := c.do("GET", KonnectPrefix+"cp-a/v1/schemas/json/service", nil); st != 200 || body["properties"] == nil {
		t.Errorf("Konnect entity schema: %d %v, want a JSON schema", st, body)
	}
	if st, body, _ := c.do("GET", "/vaults?size=1000", nil); st != 200 || len(body["data"].([]any)) != 0 {
		t.Errorf("empty collection: %d %v", st, body)
	}
	if st, body, _ := c.do("GET", "/", nil); st != 200 || body["version"] != EntityVersion {
		t.Errorf("root: %d %v", st, body)
	}
}

// TestEntityFaults: queued faults answer in order with Retry-After, then
// requests go through; writes-only faults skip reads.
func TestEntityFaults(t *testing.T) {
	api, c := newEntityServer(t)
	api.PushFaults(EntityFault{Status: 429, RetryAfter: 1500 * time.Millisecond}, EntityFault{Status: 503, WritesOnly: true})
	st, _, h := c.do("GET", "/services", nil)
	if st != 429 || h.Get("Retry-After") != "2" {
		t.Errorf("first: %d Retry-After %q, want 429 and 2", st, h.Get("Retry-After"))
	}
	if st, _, _ := c.do("GET", "/services", nil); st != 200 {
		t.Errorf("a read skips a writes-only fault: %d", st)
	}
	if st, _, _ := c.do("PUT", "/services/"+uuidN(1), map[string]any{"name": "s"}); st != 503 {
		t.Errorf("write: %d, want 503", st)
	}
	if api.PendingFaults() != 0 {
		t.Error("faults left")
	}
	api.RejectEntity("services", "bad", 400, "schema violation (host: required)")
	if st, body, _ := c.do("PUT", "/services/"+uuidN(2), map[string]any{"name": "bad"}); st != 400 || !strings.Contains(fmt.Sprint(body["message"]), "host") {
		t.Errorf("rejected entity: %d %v", st, body)
	}
}

// TestEntityBehindGateway: registered on a Gateway with WithRoutes, the
// entity API shares the gateway's scripted faults and request log.
func TestEntityBehindGateway(t *testing.T) {
	api := NewEntityAPI()
	gw := New(WithDBMode(), WithRoutes(api.Routes))
	url, err := gw.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	c := &entityClient{t: t, url: url}
	gw.Script("GET", "/services", Step{Status: 429, RetryAfter: "3"})
	if st, _, h := c.do("GET", "/services", nil); st != 429 || h.Get("Retry-After") != "3" {
		t.Errorf("gateway script: %d %q", st, h.Get("Retry-After"))
	}
	if st, _, _ := c.do("PUT", "/services/"+uuidN(1), map[string]any{"name": "s", "host": "h"}); st != 200 {
		t.Errorf("PUT through gateway: %d", st)
	}
	if st, body, _ := c.do("GET", "/", nil); st != 200 || body["configuration"].(map[string]any)["database"] != "postgres" {
		t.Errorf("root of a DB-mode gateway: %d %v", st, body)
	}
	if gw.Count("PUT", "/services/"+uuidN(1)) != 1 || len(api.Entities("", "services")) != 1 {
		t.Errorf("request log or store missed the PUT")
	}
}

// fieldOf finds a field in Kong's schema answer ({"fields":[{name:{...}}]}).
func fieldOf(t *testing.T, schema map[string]any, path ...string) map[string]any {
	t.Helper()
	fields, _ := schema["fields"].([]any)
	for _, f := range fields {
		m, _ := f.(map[string]any)
		if def, ok := m[path[0]].(map[string]any); ok {
			if len(path) == 1 {
				return def
			}
			return fieldOf(t, def, path[1:]...)
		}
	}
	t.Fatalf("schema has no field %v: %v", path, schema)
	return nil
}

// TestEntitySchemas: /schemas/<entity> and /schemas/plugins/<name> answer
// Kong 3.9's fields and defaults in Kong's shape; Konnect's
// /v1/schemas/json/<entity> answers a JSON schema; unknown names and
// Enterprise entities on the OSS root answer Kong's 404.
func TestEntitySchemas(t *testing.T) {
	_, c := newEntityServer(t)
	for _, tc := range []struct {
		path  []string
		field []string
		def   any
	}{
		{[]string{"/schemas/services"}, []string{"port"}, 80.0},
		{[]string{"/schemas/services"}, []string{"connect_timeout"}, 60000.0},
		{[]string{"/schemas/routes"}, []string{"https_redirect_status_code"}, 426.0},
		{[]string{"/schemas/routes"}, []string{"path_handling"}, "v0"},
		{[]string{"/schemas/upstreams"}, []string{"healthchecks", "active", "http_path"}, "/"},
		{[]string{"/schemas/targets"}, []string{"weight"}, 100.0},
		{[]string{"/schemas/jwt_secrets"}, []string{"algorithm"}, "HS256"},
		{[]string{"/schemas/oauth2_credentials"}, []string{"client_type"}, "confidential"},
		{[]string{"/schemas/plugins/basic-auth"}, []string{"config", "realm"}, "service"},
		{[]string{"/schemas/plugins/correlation-id"}, []string{"config", "generator"}, "uuid#counter"},
		{[]string{"/schemas/plugins/request-termination"}, []string{"config", "status_code"}, 503.0},
	} {
		st, body, _ := c.do("GET", tc.path[0], nil)
		if st != 200 {
			t.Errorf("GET %s: %d", tc.path[0], st)
			continue
		}
		if got := fieldOf(t, body, tc.field...)["default"]; got != tc.def {
			t.Errorf("%s %v default %v, want %v", tc.path[0], tc.field, got, tc.def)
		}
	}
	if st, body, _ := c.do("GET", "/schemas/routes", nil); st == 200 {
		for _, f := range body["fields"].([]any) {
			if _, ok := f.(map[string]any)["expression"]; ok {
				t.Error("traditional_compatible routes have no expression field")
			}
		}
	}
	for path, msg := range map[string]string{
		"/schemas/nope":                  "No entity named 'nope'",
		"/schemas/mtls_auth_credentials": "No entity named 'mtls_auth_credentials'",
		"/schemas/plugins/nope":          "No plugin named 'nope'",
	} {
		if st, body, _ := c.do("GET", path, nil); st != 404 || body["message"] != msg {
			t.Errorf("GET %s: %d %v, want 404 %q", path, st, body, msg)
		}
	}
	st, body, _ := c.do("GET", KonnectPrefix+"cp/v1/schemas/json/upstream", nil)
	props, _ := body["properties"].(map[string]any)
	if st != 200 || props["algorithm"].(map[string]any)["default"] != "round-robin" {
		t.Errorf("Konnect upstream schema: %d %v", st, body)
	}
	if st, _, _ := c.do("GET", KonnectPrefix+"cp/schemas/mtls_auth_credentials", nil); st != 200 {
		t.Errorf("Konnect mtls_auth_credentials schema: %d", st)
	}
}

// TestEntityStoresDefaults: an entity is stored and returned as Kong does:
// every default filled (records expanded, null for fields without one),
// auto fields generated, created_at/updated_at set; unknown fields and
// missing required fields are Kong's schema violation.
func TestEntityStoresDefaults(t *testing.T) {
	now := time.Unix(1700000000, 250e6)
	_, c := newEntityServer(t, WithEntityClock(func() time.Time { return now }))
	svc, rt := uuidN(1), uuidN(2)
	if st, body, _ := c.do("PUT", "/services/"+svc, map[string]any{"name": "s", "host": "h"}); st != 200 ||
		body["port"] != 80.0 || body["protocol"] != "http" || body["retries"] != 5.0 || body["enabled"] != true ||
		body["read_timeout"] != 60000.0 || body["created_at"] != 1700000000.0 || body["updated_at"] != 1700000000.0 ||
		body["path"] != nil {
		t.Errorf("service: %d %v", st, body)
	}
	c.do("PUT", "/routes/"+rt, map[string]any{"name": "r", "paths": []any{"/"}, "service": map[string]any{"id": svc}})
	st, body, _ := c.do("GET", "/routes/r", nil)
	want := map[string]any{"https_redirect_status_code": 426.0, "strip_path": true, "preserve_host": false,
		"regex_priority": 0.0, "path_handling": "v0", "request_buffering": true, "response_buffering": true,
		"protocols": []any{"http", "https"}, "hosts": nil, "created_at": 1700000000.0}
	for k, v := range want {
		if fmt.Sprint(body[k]) != fmt.Sprint(v) {
			t.Errorf("route %s = %v, want %v (%d %v)", k, body[k], v, st, body)
		}
	}
	if _, ok := body["hosts"]; !ok {
		t.Error("a field without default is returned as null")
	}
	_, body, _ = c.do("POST", "/plugins", map[string]any{"name": "basic-auth", "service": map[string]any{"id": svc}})
	cfg, _ := body["config"].(map[string]any)
	if cfg["realm"] != "service" || cfg["hide_credentials"] != false || body["enabled"] != true ||
		fmt.Sprint(body["protocols"]) != "[grpc grpcs http https]" || body["route"] != nil {
		t.Errorf("plugin defaults: %v", body)
	}
	_, body, _ = c.do("PUT", "/upstreams/"+uuidN(3), map[string]any{"name": "u",
		"healthchecks": map[string]any{"active": map[string]any{"healthy": map[string]any{"interval": 5}}}})
	hc, _ := body["healthchecks"].(map[string]any)
	active, _ := hc["active"].(map[string]any)
	healthy, _ := active["healthy"].(map[string]any)
	if healthy["interval"] != 5.0 || fmt.Sprint(healthy["http_statuses"]) != "[200 302]" || active["http_path"] != "/" ||
		hc["threshold"] != 0.0 || active["https_sni"] != nil || body["algorithm"] != "round-robin" {
		t.Errorf("upstream healthchecks: %v", body)
	}
	_, body, _ = c.do("POST", "/upstreams/u/targets", map[string]any{"target": "10.0.0.1:80"})
	if body["weight"] != 100.0 || body["created_at"] != 1700000000.25 {
		t.Errorf("target (millisecond timestamps): %v", body)
	}
	st, body, _ = c.do("POST", "/consumers", map[string]any{"username": "c", "bogus": 1})
	if st != 400 || body["message"] != "schema violation (bogus: unknown field)" || body["code"] != 2.0 {
		t.Errorf("unknown field: %d %v", st, body)
	}
	st, body, _ = c.do("POST", "/services", map[string]any{"name": "nohost"})
	if st != 400 || body["message"] != "schema violation (host: required field missing)" {
		t.Errorf("missing host: %d %v", st, body)
	}
	_, body, _ = c.do("POST", "/consumers", map[string]any{"username": "c"})
	_, body, _ = c.do("POST", "/consumers/c/key-auth", map[string]any{})
	if k, _ := body["key"].(string); len(k) != 32 {
		t.Errorf("key-auth key is generated: %v", body)
	}
}

// TestEntityKongErrorBodies: unique, foreign-key and unknown-plugin errors
// answer with Kong's status and body (kong/db/errors.lua).
func TestEntityKongErrorBodies(t *testing.T) {
	_, c := newEntityServer(t)
	c.do("PUT", "/services/"+uuidN(1), map[string]any{"name": "s", "host": "h"})
	st, body, _ := c.do("PUT", "/services/"+uuidN(2), map[string]any{"name": "s", "host": "h"})
	if st != 409 || body["code"] != 5.0 || body["name"] != "unique constraint violation" ||
		body["message"] != `UNIQUE violation detected on '{name="s"}'` || fmt.Sprint(body["fields"]) != "map[name:s]" {
		t.Errorf("unique: %d %v", st, body)
	}
	c.do("POST", "/plugins", map[string]any{"name": "cors"})
	st, body, _ = c.do("POST", "/plugins", map[string]any{"name": "cors"})
	if st != 409 || body["message"] != `UNIQUE violation detected on '{consumer=null,name="cors",route=null,service=null}'` {
		t.Errorf("plugin cache key: %d %v", st, body)
	}
	st, body, _ = c.do("PUT", "/routes/"+uuidN(3), map[string]any{"paths": []any{"/"}, "service": map[string]any{"id": uuidN(9)}})
	if st != 400 || body["code"] != 4.0 ||
		body["message"] != `the foreign key '{id="`+uuidN(9)+`"}' does not reference an existing 'services' entity.` ||
		fmt.Sprint(body["fields"]) != "map[service:map[id:"+uuidN(9)+"]]" {
		t.Errorf("foreign key: %d %v", st, body)
	}
	st, body, _ = c.do("POST", "/plugins", map[string]any{"name": "nope"})
	if st != 400 || body["message"] != "schema violation (name: plugin 'nope' not enabled; add it to the 'plugins' configuration property)" {
		t.Errorf("unknown plugin: %d %v", st, body)
	}
}

// TestEntityOSSCollections: the DB-mode root is Kong OSS 3.9: /tags lists
// tagged entities; /workspaces (no Admin API in OSS) and the Enterprise
// collections answer 404; a Konnect control plane has consumer groups and
// mTLS credentials.
func TestEntityOSSCollections(t *testing.T) {
	_, c := newEntityServer(t)
	c.do("PUT", "/services/"+uuidN(1), map[string]any{"name": "s", "host": "h", "tags": []any{"a", "b"}})
	if st, body, _ := c.do("GET", "/tags", nil); st != 200 || len(body["data"].([]any)) != 2 {
		t.Errorf("/tags: %d %v", st, body)
	}
	if st, body, _ := c.do("GET", "/tags/a", nil); st != 200 || len(body["data"].([]any)) != 1 ||
		body["data"].([]any)[0].(map[string]any)["entity_name"] != "services" {
		t.Errorf("/tags/a: %d %v", st, body)
	}
	for _, p := range []string{"/workspaces", "/consumer_groups", "/licenses", "/mtls-auths", "/partials"} {
		if st, _, _ := c.do("GET", p, nil); st != 404 {
			t.Errorf("GET %s on Kong OSS: %d, want 404", p, st)
		}
	}
	for _, p := range []string{"/vaults", "/key-sets", "/keys", "/filter-chains"} {
		if st, _, _ := c.do("GET", p, nil); st != 200 {
			t.Errorf("GET %s on Kong OSS: %d, want 200", p, st)
		}
	}
	for _, p := range []string{"/consumer_groups", "/mtls-auths"} {
		if st, _, _ := c.do("GET", KonnectPrefix+"cp"+p, nil); st != 200 {
			t.Errorf("GET %s on Konnect: %d, want 200", p, st)
		}
	}
}

// TestEntityTTL: a key-auth written with a ttl answers the whole seconds
// it has left and is gone once they run out.
func TestEntityTTL(t *testing.T) {
	now := time.Unix(1700000000, 0)
	_, c := newEntityServer(t, WithEntityClock(func() time.Time { return now }))
	cons, key := uuidN(1), uuidN(2)
	c.do("PUT", "/consumers/"+cons, map[string]any{"username": "u"})
	if st, body, _ := c.do("PUT", "/consumers/"+cons+"/key-auth/"+key, map[string]any{"key": "k", "ttl": 10}); st != 200 || body["ttl"] != 10.0 {
		t.Fatalf("create with ttl: %d %v", st, body)
	}
	now = now.Add(2500 * time.Millisecond)
	if st, body, _ := c.do("GET", "/key-auths/"+key, nil); st != 200 || body["ttl"] != 7.0 {
		t.Errorf("2.5 s later: %d ttl %v, want 7 (rounded down)", st, body["ttl"])
	}
	now = now.Add(7500 * time.Millisecond)
	if st, _, _ := c.do("GET", "/key-auths/"+key, nil); st != 404 {
		t.Errorf("expired: %d, want 404", st)
	}
}

// TestEntityPluginShorthands: a deprecated shorthand field (rate-limiting's
// config.redis_host) is stored at its new path and read back at both.
func TestEntityPluginShorthands(t *testing.T) {
	_, c := newEntityServer(t)
	st, body, _ := c.do("PUT", "/plugins/"+uuidN(1), map[string]any{"name": "rate-limiting",
		"config": map[string]any{"minute": 5, "redis_host": "r.local"}})
	cfg, _ := body["config"].(map[string]any)
	redis, _ := cfg["redis"].(map[string]any)
	if st != 200 || redis["host"] != "r.local" || cfg["redis_host"] != "r.local" || redis["port"] != 6379.0 {
		t.Fatalf("shorthand: %d %v", st, body)
	}
	st, body, _ = c.do("PUT", "/plugins/"+uuidN(2), map[string]any{"name": "rate-limiting", "service": nil,
		"config": map[string]any{"minute": 5, "redis_host": "a", "redis": map[string]any{"host": "b"}}})
	if st != 400 || !strings.Contains(fmt.Sprint(body["message"]), "both deprecated and new field are used") {
		t.Errorf("mismatching shorthand: %d %v", st, body)
	}
}
