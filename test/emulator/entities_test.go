package emulator

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

func newEntityServer(t *testing.T) (*EntityAPI, *entityClient) {
	t.Helper()
	api := NewEntityAPI()
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
	if st, body, _ := c.do("PUT", "/routes/"+rt, map[string]any{"name": "r", "service": map[string]any{"id": svc}}); st != 400 ||
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
	if st, body, _ := c.do("GET", KonnectPrefix+"cp-a/schemas/plugins/anything", nil); st != 200 || body["fields"] == nil {
		t.Errorf("plugin schema: %d %v", st, body)
	}
	if st, _, _ := c.do("GET", KonnectPrefix+"cp-a/v1/schemas/json/service", nil); st != 404 {
		t.Errorf("Konnect entity schema: %d, want 404 (tolerated by the reconciler)", st)
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
