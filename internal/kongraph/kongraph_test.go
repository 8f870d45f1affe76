package kongraph

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/test/harness"
)

func fixtureJSON(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return j
}

// TestEveryFixtureRemovingAnyEntityLeavesNoDanglingReference removes each
// entity of each of the 58 KIC golden configurations in turn: the
// fallback never names an entity it does not hold (checked by
// danglingRefs, written apart from the closure's graph), holds every
// entity that is not excluded, and holds none that is.
func TestEveryFixtureRemovingAnyEntityLeavesNoDanglingReference(t *testing.T) {
	files := harness.Fixtures(t)
	if len(files) < 58 {
		t.Fatalf("%d fixtures, want the 58 KIC golden configurations", len(files))
	}
	total := 0
	for _, f := range files {
		raw := fixtureJSON(t, f)
		d, err := Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if bad := danglingRefs(t, raw); len(bad) > 0 {
			t.Fatalf("%s: the fixture itself has dangling references %v", filepath.Base(f), bad)
		}
		ents := d.Entities()
		for i, e := range ents {
			total++
			body, excl, err := d.Fallback([]int{i}, nil)
			if err != nil {
				t.Fatalf("%s: without %s: %v", filepath.Base(f), e.Key(), err)
			}
			if bad := danglingRefs(t, body); len(bad) > 0 {
				t.Fatalf("%s: without %s: dangling references %v", filepath.Base(f), e.Key(), bad)
			}
			if !slices.ContainsFunc(excl, func(x Excluded) bool { return x.Index == i && x.Rejected }) {
				t.Fatalf("%s: without %s: excluded %v does not report it as rejected", filepath.Base(f), e.Key(), excl)
			}
			got, err := Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			if n, want := len(got.Entities()), len(ents)-len(excl); n != want {
				t.Fatalf("%s: without %s: fallback holds %d entities, want %d - %d excluded", filepath.Base(f), e.Key(), n, len(ents), len(excl))
			}
			for _, x := range excl {
				if x.ID != "" {
					if _, ok := got.Find(x.Type, x.ID, ""); ok {
						t.Fatalf("%s: without %s: excluded %s is still there", filepath.Base(f), e.Key(), x.Key())
					}
				}
			}
		}
	}
	t.Logf("%d fixtures, %d single-entity removals", len(files), total)
}

// danglingRefs lists every foreign key of a declarative configuration
// that names no entity of it. It reads the document on its own terms
// (paths of lists and the fields that refer), not through Doc.
func danglingRefs(t *testing.T, raw []byte) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	// have[type] holds the ids and endpoint keys present.
	have := map[string]map[string]bool{}
	put := func(typ string, obj map[string]any, keys ...string) {
		if have[typ] == nil {
			have[typ] = map[string]bool{}
		}
		for _, k := range append(keys, "id") {
			if s, _ := obj[k].(string); s != "" {
				have[typ][s] = true
			}
		}
	}
	type use struct{ typ, val, where string }
	var uses []use
	need := func(typ string, v any, where string) {
		switch r := v.(type) {
		case nil:
		case string:
			uses = append(uses, use{typ, r, where})
		case map[string]any:
			for _, k := range []string{"id", "name", "username"} {
				if s, _ := r[k].(string); s != "" {
					uses = append(uses, use{typ, s, where})
					return
				}
			}
		case []any:
			for _, x := range r {
				uses = append(uses, use{typ, x.(string), where})
			}
		}
	}
	list := func(v any) []map[string]any {
		var out []map[string]any
		l, _ := v.([]any)
		for _, x := range l {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	creds := []string{"keyauth_credentials", "basicauth_credentials", "hmacauth_credentials", "jwt_secrets", "acls", "mtls_auth_credentials", "oauth2_credentials"}
	var plugin func(p map[string]any, where string)
	plugin = func(p map[string]any, where string) {
		for _, f := range []string{"service", "route", "consumer", "consumer_group"} {
			need(f, p[f], where)
		}
	}
	for _, c := range list(root["certificates"]) {
		put("certificate", c)
		for _, s := range list(c["snis"]) {
			put("sni", s, "name")
		}
	}
	for _, c := range list(root["ca_certificates"]) {
		put("ca_certificate", c)
	}
	for _, s := range list(root["snis"]) {
		put("sni", s, "name")
		need("certificate", s["certificate"], "snis")
	}
	for _, s := range list(root["services"]) {
		put("service", s, "name")
		need("certificate", s["client_certificate"], "services")
		need("ca_certificate", s["ca_certificates"], "services")
		for _, r := range list(s["routes"]) {
			put("route", r, "name")
			for _, p := range list(r["plugins"]) {
				plugin(p, "services.routes.plugins")
			}
		}
		for _, p := range list(s["plugins"]) {
			plugin(p, "services.plugins")
		}
	}
	for _, r := range list(root["routes"]) {
		put("route", r, "name")
		need("service", r["service"], "routes")
		for _, p := range list(r["plugins"]) {
			plugin(p, "routes.plugins")
		}
	}
	for _, u := range list(root["upstreams"]) {
		put("upstream", u, "name")
		need("certificate", u["client_certificate"], "upstreams")
	}
	for _, x := range list(root["targets"]) {
		need("upstream", x["upstream"], "targets")
	}
	for _, g := range list(root["consumer_groups"]) {
		put("consumer_group", g, "name")
		for _, p := range list(g["plugins"]) {
			plugin(p, "consumer_groups.plugins")
		}
	}
	for _, c := range list(root["consumers"]) {
		put("consumer", c, "username", "custom_id")
		for _, p := range list(c["plugins"]) {
			plugin(p, "consumers.plugins")
		}
		for _, g := range list(c["groups"]) {
			need("consumer_group", g, "consumers.groups")
		}
	}
	for _, cr := range creds {
		for _, x := range list(root[cr]) {
			need("consumer", x["consumer"], cr)
		}
	}
	for _, m := range list(root["consumer_group_consumers"]) {
		need("consumer", m["consumer"], "consumer_group_consumers")
		need("consumer_group", m["consumer_group"], "consumer_group_consumers")
	}
	for _, p := range list(root["plugins"]) {
		plugin(p, "plugins")
	}
	for _, d := range list(root["degraphql_routes"]) {
		need("service", d["service"], "degraphql_routes")
	}
	var bad []string
	for _, u := range uses {
		if !have[u.typ][u.val] {
			bad = append(bad, u.where+" -> "+u.typ+" "+u.val)
		}
	}
	return bad
}

// TestDanglingRefsSeesARemovedService shows the walker can fail: a route
// naming a service that is not there is reported.
func TestDanglingRefsSeesARemovedService(t *testing.T) {
	raw := []byte(`{"_format_version":"3.0","routes":[{"name":"r","service":"gone","paths":["/"]}]}`)
	if bad := danglingRefs(t, raw); len(bad) != 1 || !strings.Contains(bad[0], "service gone") {
		t.Fatalf("danglingRefs = %v, want the route's service", bad)
	}
}

// TestFallbackKeepsThePreviousVersion: a route rejected in the new
// configuration is kept at its previous version (its service is there),
// the plugin on it keeps its new version, and a route whose previous
// version names a service that is gone is excluded with its dependant.
func TestFallbackKeepsThePreviousVersion(t *testing.T) {
	prev, err := Parse([]byte(`{"_format_version":"3.0","services":[
	 {"name":"s","id":"11111111-1111-1111-1111-111111111111","host":"a","routes":[
	   {"name":"r","id":"22222222-2222-2222-2222-222222222222","paths":["/old"]}]},
	 {"name":"old-svc","host":"c","routes":[{"name":"r2","paths":["/r2"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Parse([]byte(`{"_format_version":"3.0","services":[
	 {"name":"s","id":"11111111-1111-1111-1111-111111111111","host":"a","routes":[
	   {"name":"r","id":"22222222-2222-2222-2222-222222222222","paths":["bad"],"tags":["k8s-name:r"],
	    "plugins":[{"name":"cors","id":"33333333-3333-3333-3333-333333333333"}]}]},
	 {"name":"t","host":"b","routes":[{"name":"r2","paths":["bad"]}]},
	 {"name":"u","host":"d","routes":[{"name":"ok","paths":["/ok"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := cur.Find("route", "22222222-2222-2222-2222-222222222222", "")
	r2, _ := cur.Find("route", "", "r2")
	body, excl, err := cur.Fallback([]int{r, r2}, prev)
	if err != nil {
		t.Fatal(err)
	}
	if bad := danglingRefs(t, body); len(bad) > 0 {
		t.Fatalf("dangling %v in %s", bad, body)
	}
	var got []string
	for _, x := range excl {
		got = append(got, x.Key()+map[bool]string{true: " (previous kept)"}[x.PreviousKept])
	}
	want := []string{"route r (previous kept)", "route r2"}
	if !slices.Equal(got, want) {
		t.Fatalf("excluded %v, want %v", got, want)
	}
	for _, s := range []string{`"/old"`, `"cors"`, `"/ok"`} {
		if !strings.Contains(string(body), s) {
			t.Errorf("fallback lacks %s: %s", s, body)
		}
	}
	if strings.Contains(string(body), `"bad"`) {
		t.Errorf("fallback holds a rejected version: %s", body)
	}
}
