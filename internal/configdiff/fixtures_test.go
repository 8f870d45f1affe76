package configdiff

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/kongraph"
)

// fixtures are the kic-golden configurations in their JSON form.
func fixtures(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../../testdata/kic-golden/*.yaml")
	if err != nil || len(files) != 58 {
		t.Fatalf("%d fixtures (%v), want the 58 kic-golden configurations", len(files), err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.Check(raw, config.FormatYAML)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = c.JSON
	}
	return out
}

// located is one entity of a decoded document.
type located struct {
	typ string
	obj map[string]any
}

// locate lists every entity of root in kongraph's walk order, walking the
// document apart from flatten.
func locate(root map[string]any) []located {
	var out []located
	var visit func(typ string, holder map[string]any, key string)
	visit = func(typ string, holder map[string]any, key string) {
		list, _ := holder[key].([]any)
		for _, v := range list {
			obj, ok := v.(map[string]any)
			if !ok {
				continue
			}
			out = append(out, located{typ: typ, obj: obj})
			for _, k := range kongraph.NestedKeys(typ) {
				visit(childOf(typ, k), obj, k)
			}
		}
	}
	for _, k := range sortedKeys(root) {
		if t, ok := collectionType[k]; ok {
			visit(t, root, k)
		}
	}
	return out
}

var collectionType = map[string]string{
	"services": "service", "routes": "route", "plugins": "plugin", "consumers": "consumer",
	"consumer_groups": "consumer_group", "upstreams": "upstream", "targets": "target",
	"certificates": "certificate", "snis": "sni", "ca_certificates": "ca_certificate",
	"keyauth_credentials": "keyauth_credentials", "basicauth_credentials": "basicauth_credentials",
	"hmacauth_credentials": "hmacauth_credentials", "jwt_secrets": "jwt_secrets", "acls": "acls",
	"mtls_auth_credentials": "mtls_auth_credentials", "oauth2_credentials": "oauth2_credentials",
	"consumer_group_consumers": "consumer_group_consumer", "vaults": "vault", "key_sets": "key_set", "keys": "key", "filter_chains": "filter_chain",
	"degraphql_routes": "degraphql_routes",
}

func childOf(parent, key string) string {
	if (parent == "consumer" && key == "groups") || (parent == "consumer_group" && key == "consumers") {
		return "consumer_group_consumer"
	}
	return collectionType[key]
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// identityFields are the fields an identity may be made of, which a
// field change leaves alone.
var identityFields = []string{"id", "name", "username", "custom_id", "target", "key", "group",
	"client_id", "prefix", "cert", "subject_name", "uri", "query", "service", "route", "consumer",
	"consumer_group", "upstream", "certificate", "set"}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate decodes raw, lets change edit the n-th entity, and encodes it
// again; ok is false when there is no n-th entity or change declines it.
func mutate(t *testing.T, raw []byte, n int, change func(root map[string]any, e located) bool) ([]byte, located, bool) {
	var root map[string]any
	decode(t, raw, &root)
	ents := locate(root)
	if n >= len(ents) {
		return nil, located{}, false
	}
	if n := kongEntities(t, raw); len(ents) != n {
		t.Fatalf("%d entities located, kongraph sees %d", len(ents), n)
	}
	if !change(root, ents[n]) {
		return nil, ents[n], false
	}
	return mustJSON(t, root), ents[n], true
}

// remove deletes obj from the list that holds it, in its holder.
func remove(root map[string]any, obj map[string]any) {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if l, ok := c.([]any); ok {
					for i, e := range l {
						if m, ok := e.(map[string]any); ok && reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(obj).UnsafePointer() {
							x[k] = slices.Delete(slices.Clone(l), i, i+1)
							return true
						}
					}
				}
				if walk(c) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	walk(root)
}

func oneChange(t *testing.T, what string, a, b []byte, action Action, typ string) Change {
	t.Helper()
	d, err := Configs(a, b)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(d.Changes) != 1 || d.Changes[0].Action != action || d.Changes[0].Entity.Type != typ {
		t.Fatalf("%s: want one %s of a %s, got %s", what, action, typ, mustJSON(t, d.Changes))
	}
	return d.Changes[0]
}

func TestFixturesOneChange(t *testing.T) {
	for name, raw := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			doc, err := kongraph.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := Configs(raw, raw); err != nil || len(d.Changes) != 0 {
				t.Fatalf("against itself: %v %v", d, err)
			}
			deleted, changed := 0, 0
			for n := 0; ; n++ {
				// Delete the n-th entity when nothing depends on it (an
				// entity nested in it or naming it).
				b, e, ok := mutate(t, raw, n, func(root map[string]any, e located) bool {
					if len(doc.Closure([]int{n})) != 1 {
						return false
					}
					remove(root, e.obj)
					return true
				})
				if e.obj == nil {
					break
				}
				if ok {
					deleted++
					oneChange(t, "delete entity "+string(mustJSON(t, e.obj)), raw, b, Delete, kongType(e.typ))
				}
				// Change one field that is not part of an identity.
				var field string
				b, e, ok = mutate(t, raw, n, func(_ map[string]any, e located) bool {
					for _, k := range sortedKeys(e.obj) {
						if slices.Contains(identityFields, k) || slices.Contains(kongraph.NestedKeys(e.typ), k) {
							continue
						}
						field = k
						e.obj[k] = "configdiff-changed"
						return true
					}
					// Only identity fields: add one.
					field = "configdiff_added"
					e.obj[field] = "configdiff-changed"
					return true
				})
				if ok {
					changed++
					c := oneChange(t, "change "+field+" of "+string(mustJSON(t, e.obj)), raw, b, Update, kongType(e.typ))
					if len(c.Fields) != 1 || !slices.Equal(c.Fields[0].Path, []string{field}) || string(c.Fields[0].New) != `"configdiff-changed"` && string(c.Fields[0].New) != `"<redacted>"` {
						t.Fatalf("change %s of a %s: fields %s", field, e.typ, mustJSON(t, c.Fields))
					}
				}
			}
			if deleted == 0 || changed == 0 {
				t.Fatalf("%d deletes and %d changes tried", deleted, changed)
			}
			// Create a service, and a route under the first service.
			root := map[string]any{}
			decode(t, raw, &root)
			root["services"] = append(slices.Clone(anyList(root["services"])), map[string]any{"name": "configdiff-new", "host": "new.local"})
			c := oneChange(t, "create a service", raw, mustJSON(t, root), Create, "service")
			if c.Entity.Name != "configdiff-new" {
				t.Fatalf("created %s", c.Entity)
			}
			root = map[string]any{}
			decode(t, raw, &root)
			if svcs := anyList(root["services"]); len(svcs) > 0 {
				svc := svcs[0].(map[string]any)
				svc["routes"] = append(slices.Clone(anyList(svc["routes"])), map[string]any{"name": "configdiff-route", "paths": []any{"/new"}})
				c := oneChange(t, "create a route", raw, mustJSON(t, root), Create, "route")
				if c.Entity.Parent == "" {
					t.Fatalf("a nested route shows no parent: %s", c.Entity)
				}
			}
		})
	}
}

// kongEntities counts the entities kongraph walks.
func kongEntities(t *testing.T, raw []byte) int {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	n := 0
	kongraph.Walk(root, func(string, map[string]any, bool, string) bool { n++; return false })
	return n
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func kongType(kt string) string { return strings.TrimSuffix(kt, "s") }

// TestCountAsTheDiffCounts: Count, which scans, finds the entities the
// diff's decoding walk finds, in every fixture.
func TestCountAsTheDiffCounts(t *testing.T) {
	for name, raw := range fixtures(t) {
		got := Count(raw)
		s, err := flatten(raw)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, e := range s.list {
			want[e.typ]++
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: Count %v, the diff sees %v", name, got, want)
		}
	}
	// Strings that look like structure, and escapes, are strings.
	tricky := []byte(`{"services":[{"name":"a\\\"[{","routes":[{"name":"r","paths":["/{x}", "\\"]}], "x":{"routes":[{}]}}], "routes" : [ {"name":"r2"} ]}`)
	if got, want := Count(tricky), map[string]int{"service": 1, "route": 2}; !maps.Equal(got, want) {
		t.Errorf("Count(%s) = %v, want %v", tricky, got, want)
	}
}
