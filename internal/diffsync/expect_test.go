package diffsync

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/confighub/confighub/test/kongemu"
)

// expected is one entity a configuration declares, found by walking the
// configuration's JSON independently of the reconciler.
type expected struct {
	collection string
	key        string // how the entity is found at the destination
	fields     map[string]any
	parent     string // "<collection>:<key>" of the entity it belongs to
}

// nestedKeys are the fields that hold nested entities, not entity values.
var nestedKeys = map[string]string{
	"routes": "routes", "plugins": "plugins", "targets": "targets", "snis": "snis",
	"keyauth_credentials": "key-auths", "basicauth_credentials": "basic-auths",
	"hmacauth_credentials": "hmac-auths", "jwt_secrets": "jwts", "acls": "acls",
	"mtls_auth_credentials": "mtls-auths", "oauth2_credentials": "oauth2",
}

// entityKey is how an entity is identified in both the config and the
// emulator.
func entityKey(collection string, e map[string]any) string {
	s := func(f string) string { v, _ := e[f].(string); return v }
	switch collection {
	case "services", "routes", "upstreams", "snis":
		return s("name")
	case "consumers":
		if s("username") != "" {
			return s("username")
		}
		return "custom_id=" + s("custom_id")
	case "targets":
		return s("target")
	case "plugins":
		if s("instance_name") != "" {
			return s("name") + "/" + s("instance_name")
		}
		return s("name")
	case "key-auths", "jwts":
		return s("key")
	case "basic-auths", "hmac-auths":
		return s("username")
	case "acls":
		return s("group")
	default:
		return s("id")
	}
}

// walkConfig lists the entities of a configuration.
func walkConfig(t *testing.T, raw []byte) []expected {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	var out []expected
	var walk func(collection string, list any, parent string)
	walk = func(collection string, list any, parent string) {
		items, _ := list.([]any)
		for _, it := range items {
			e, ok := it.(map[string]any)
			if !ok {
				continue
			}
			x := expected{collection: collection, key: entityKey(collection, e), fields: map[string]any{}, parent: parent}
			if collection == "plugins" {
				x.key += "@" + parent
			}
			if collection == "acls" || collection == "plugins" || collection == "key-auths" {
				x.key += "@" + parent
			}
			self := collection + ":" + entityKey(collection, e)
			for k, v := range e {
				if child, ok := nestedKeys[k]; ok {
					walk(child, v, self)
					continue
				}
				if k == "service" || k == "route" || k == "consumer" || k == "upstream" || k == "certificate" {
					continue // relations are checked through parent
				}
				x.fields[k] = v
			}
			out = append(out, x)
		}
	}
	for _, c := range []string{"services", "routes", "consumers", "plugins", "upstreams", "certificates", "ca_certificates"} {
		walk(c, root[c], "")
	}
	return out
}

// assertMirrors fails unless the emulator scope holds exactly the
// configuration's entities, each with the configuration's field values
// (the destination stores Kong's defaults besides them: a record there may
// hold more fields than the configuration gives).
func assertMirrors(t *testing.T, api *kongemu.EntityAPI, cp string, raw []byte) {
	t.Helper()
	want := walkConfig(t, raw)
	byCol := map[string][]expected{}
	for _, x := range want {
		byCol[x.collection] = append(byCol[x.collection], x)
	}
	cols := []string{"services", "routes", "plugins", "consumers", "upstreams", "targets", "certificates",
		"snis", "ca_certificates", "acls", "basic-auths", "hmac-auths", "jwts", "key-auths", "mtls-auths", "oauth2"}
	for _, c := range cols {
		have := api.Entities(cp, c)
		if len(have) != len(byCol[c]) {
			t.Errorf("%s: destination holds %d, configuration declares %d", c, len(have), len(byCol[c]))
			continue
		}
		index := map[string][]map[string]any{}
		for _, h := range have {
			index[entityKey(c, h)] = append(index[entityKey(c, h)], h)
		}
		for _, x := range byCol[c] {
			base := strings.SplitN(x.key, "@", 2)[0]
			cands := index[base]
			if len(cands) == 0 {
				t.Errorf("%s %q: missing at the destination", c, x.key)
				continue
			}
			var diffs []string
			matched := false
			for _, h := range cands {
				diffs = diffs[:0]
				for k, v := range x.fields {
					if c == "basic-auths" && k == "password" {
						continue // Kong stores a hash
					}
					if !jsonContains(v, h[k]) {
						diffs = append(diffs, fmt.Sprintf("%s: config %v, destination %v", k, v, h[k]))
					}
				}
				if len(diffs) == 0 {
					matched = true
					break
				}
			}
			if !matched {
				sort.Strings(diffs)
				t.Errorf("%s %q differs: %s", c, x.key, strings.Join(diffs, "; "))
			}
		}
	}
}

// jsonContains reports whether have holds want: equal values, except that
// an object of have (also inside a list) may hold more keys (Kong's
// defaults, or null for a field without one) than want's.
func jsonContains(want, have any) bool {
	var w, h any
	if !reEncode(want, &w) || !reEncode(have, &h) {
		return false
	}
	return subsetOf(w, h)
}

func subsetOf(want, have any) bool {
	if wl, ok := want.([]any); ok {
		hl, ok := have.([]any)
		if !ok || len(wl) != len(hl) {
			return false
		}
		for i := range wl {
			if !subsetOf(wl[i], hl[i]) {
				return false
			}
		}
		return true
	}
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(want, have)
	}
	hm, ok := have.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range wm {
		if !subsetOf(v, hm[k]) {
			return false
		}
	}
	return true
}

func reEncode(v any, out *any) bool {
	b, err := json.Marshal(v)
	return err == nil && json.Unmarshal(b, out) == nil
}
