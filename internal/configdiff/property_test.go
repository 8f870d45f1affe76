package configdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/confighub/confighub/internal/redact"
)

// tb is what the helpers need of a *testing.T and a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// genConfig draws a configuration from small pools of names, so that two
// draws share some entities, differ in others and change some fields:
// services with nested routes and plugins, upstreams with targets,
// consumers with credentials, top-level plugins scoped by name.
func genConfig(t *rapid.T, label string) map[string]any {
	names := []string{"a", "b", "c", "d"}
	pick := func(l string) []string {
		return rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(t, label+l)
	}
	val := func(l string) any {
		return rapid.SampledFrom([]any{"x", "y", json.Number("1"), json.Number("2"), true, nil}).Draw(t, label+l)
	}
	var services, upstreams, consumers, plugins []any
	for _, s := range pick("services") {
		svc := map[string]any{"name": "svc-" + s, "host": val("host" + s), "port": val("port" + s)}
		if rapid.Bool().Draw(t, label+"svcid"+s) {
			svc["id"] = "id-svc-" + s
		}
		var routes []any
		for _, r := range pick("routes" + s) {
			route := map[string]any{"name": "r-" + s + r, "paths": []any{val("path" + s + r)}, "strip_path": val("strip" + s + r)}
			if p := pick("rplugins" + s + r); len(p) > 0 {
				route["plugins"] = []any{map[string]any{"name": "plugin-" + p[0], "config": map[string]any{"k": val("cfg" + s + r), "n": map[string]any{"deep": val("deep" + s + r)}}}}
			}
			routes = append(routes, route)
		}
		if len(routes) > 0 {
			svc["routes"] = routes
		}
		services = append(services, svc)
	}
	for _, u := range pick("upstreams") {
		up := map[string]any{"name": "up-" + u}
		var targets []any
		for _, tg := range pick("targets" + u) {
			targets = append(targets, map[string]any{"target": tg + ".local:80", "weight": val("w" + u + tg)})
		}
		if len(targets) > 0 {
			up["targets"] = targets
		}
		upstreams = append(upstreams, up)
	}
	for _, c := range pick("consumers") {
		con := map[string]any{"username": "user-" + c, "tags": []any{"k8s-name:" + c}}
		if k := pick("keys" + c); len(k) > 0 {
			con["keyauth_credentials"] = []any{map[string]any{"key": "secret-key-" + c + k[0]}}
		}
		if p := pick("passwords" + c); len(p) > 0 {
			con["basicauth_credentials"] = []any{map[string]any{"username": "basic-" + c, "password": "secret-pw-" + p[0]}}
		}
		consumers = append(consumers, con)
	}
	for _, p := range pick("plugins") {
		pl := map[string]any{"name": "plugin-" + p, "config": map[string]any{"v": val("pv" + p)}}
		if s := pick("pscope" + p); len(s) > 0 {
			pl["service"] = "svc-" + s[0]
		}
		plugins = append(plugins, pl)
	}
	root := map[string]any{"_format_version": "3.0"}
	for k, v := range map[string][]any{"services": services, "upstreams": upstreams, "consumers": consumers, "plugins": plugins} {
		if len(v) > 0 {
			root[k] = v
		}
	}
	return root
}

// entities is a configuration's flattened entities by identity, redacted
// as a diff shows them.
func entities(t tb, raw []byte) map[string]map[string]any {
	s, err := flatten(raw)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, e := range s.list {
		out[e.key] = roundTrip(t, redact.Entity(e.typ, e.own()))
	}
	return out
}

func roundTrip(t tb, v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	decode(t, b, &m)
	return m
}

func decode(t tb, b []byte, v any) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// apply applies d to entities, as a reconciler would: deletes, creates
// with the object shown, and sets (or removes) each changed field.
func apply(t tb, ents map[string]map[string]any, d *Diff) {
	for _, c := range d.Changes {
		switch c.Action {
		case Delete:
			if _, ok := ents[c.key]; !ok {
				t.Fatalf("delete of %s, which is not there", c.Entity)
			}
			delete(ents, c.key)
		case Create:
			if _, ok := ents[c.key]; ok {
				t.Fatalf("create of %s, which is there", c.Entity)
			}
			var m map[string]any
			decode(t, c.Object, &m)
			ents[c.key] = m
		case Update:
			obj, ok := ents[c.key]
			if !ok {
				t.Fatalf("update of %s, which is not there", c.Entity)
			}
			for _, f := range c.Fields {
				m := obj
				for _, k := range f.Path[:len(f.Path)-1] {
					m = m[k].(map[string]any)
				}
				last := f.Path[len(f.Path)-1]
				if f.New == nil {
					delete(m, last)
					continue
				}
				var v any
				decode(t, f.New, &v)
				m[last] = v
			}
		default:
			t.Fatalf("action %q", c.Action)
		}
	}
}

func TestApplyingTheDiffGivesTheTarget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, err := json.Marshal(genConfig(t, "a"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(genConfig(t, "b"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := Configs(a, b)
		if err != nil {
			t.Fatal(err)
		}
		got, want := entities(t, a), entities(t, b)
		apply(t, got, d)
		if !reflect.DeepEqual(toAny(got), toAny(want)) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			t.Fatalf("diff applied to a:\n%s\nb:\n%s\ndiff: %+v", gj, wj, d.Changes)
		}
		if self, err := Configs(a, a); err != nil || len(self.Changes) != 0 {
			t.Fatalf("a against itself: %+v, %v", self, err)
		}
	})
}

func toAny(m map[string]map[string]any) any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestApplyCanFail: the property fails when a change is lost.
func TestApplyCanFail(t *testing.T) {
	a := []byte(`{"services":[{"name":"s","port":1}]}`)
	b := []byte(`{"services":[{"name":"s","port":2}]}`)
	d, err := Configs(a, b)
	if err != nil || len(d.Changes) != 1 {
		t.Fatalf("%+v %v", d, err)
	}
	got := entities(t, a)
	apply(t, got, &Diff{})
	if reflect.DeepEqual(toAny(got), toAny(entities(t, b))) {
		t.Fatal("an empty diff applied gives b")
	}
	apply(t, got, d)
	if !reflect.DeepEqual(toAny(got), toAny(entities(t, b))) {
		t.Fatal(fmt.Sprint("the diff applied does not give b: ", got))
	}
}
