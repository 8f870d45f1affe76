package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/kongraph"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// fallbackFixture is a KIC golden configuration whose routes carry
// plugins (flat, naming the route).
const fallbackFixture = "kongplugin-instance-name__default.yaml"

// brokenRoute is the route the tests break: one plugin depends on it.
const brokenRoute = "default.httpbin.httpbin..80"

// breakRoute returns the fixture (JSON) with brokenRoute given a field
// Kong does not know and, when path is set, that path.
func breakRoute(t *testing.T, raw []byte, broken bool, path string) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range doc["services"].([]any) {
		for _, r := range s.(map[string]any)["routes"].([]any) {
			route := r.(map[string]any)
			if route["name"] == brokenRoute {
				found = true
				if broken {
					route["colour"] = "red"
				}
				if path != "" {
					route["paths"] = []any{path}
				}
			}
		}
	}
	if !found {
		t.Fatalf("%s has no route %s", fallbackFixture, brokenRoute)
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func entities(t *testing.T, body []byte) []kongraph.Entity {
	t.Helper()
	j, err := yaml.YAMLToJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(j, &root); err != nil {
		t.Fatal(err)
	}
	var out []kongraph.Entity
	kongraph.Walk(root, func(typ string, obj map[string]any, _ bool, _ string) bool {
		out = append(out, kongraph.Identify(typ, obj))
		return false
	})
	return out
}

func keys(es []kongraph.Entity) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Type+" "+e.ID+" "+e.Name)
	}
	slices.Sort(out)
	return out
}

func waitState(t *testing.T, f *fleet, gen uint64, state confighubv1.SinkState) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() bool {
		for _, s := range f.status(t).GetSinks() {
			if s.GetDesiredGeneration() != gen || s.GetState() != state {
				return false
			}
		}
		return true
	}, "every sink %s at generation %d", state, gen)
}

func rejections(g *kongemu.Gateway) int {
	n := 0
	for _, r := range g.Requests() {
		if r.Path == "/config" && r.Status == http.StatusBadRequest {
			n++
		}
	}
	return n
}

// TestKongFallbackAppliesEverythingElse: with on_reject:
// ON_REJECT_FALLBACK, a real KIC configuration with one broken route
// reaches the gateways without that route and the plugin on it (and only
// them), reported with their k8s-* tags as DEGRADED, the generation not
// converged; a restarted gateway gets the fallback back (not the rejected
// whole); the fix returns the sinks to APPLIED; breaking the route again
// keeps its previous valid version and the plugin on it.
func TestKongFallbackAppliesEverythingElse(t *testing.T) {
	f := startFleetWith(t, 2, "10s", "    on_reject: ON_REJECT_FALLBACK\n")
	good := harness.Fixture(t, fallbackFixture)
	broken := breakRoute(t, good, true, "")
	all := entities(t, good)

	gen := f.push(t, broken)
	waitState(t, f, gen, confighubv1.SinkState_SINK_STATE_DEGRADED)
	st := sinkStatus(t, f.api, "gw-0")
	t.Logf("status of gw-0 running the fallback of generation %d:\n%s", gen, protojson.Format(st))
	if st.GetAppliedGeneration() >= gen || st.GetRejectedGeneration() != gen || st.GetFallbackGeneration() != gen || st.GetFallbackHash() == "" {
		t.Fatalf("degraded status: applied %d rejected %d fallback %d %q", st.GetAppliedGeneration(), st.GetRejectedGeneration(), st.GetFallbackGeneration(), st.GetFallbackHash())
	}
	ex := st.GetExcludedEntities()
	if len(ex) != 2 {
		t.Fatalf("excluded %v, want the route and the plugin on it", ex)
	}
	var route, plugin *confighubv1.ExcludedEntity
	for _, x := range ex {
		switch x.GetEntityType() {
		case "route":
			route = x
		case "plugin":
			plugin = x
		}
	}
	if route == nil || route.GetEntityName() != brokenRoute || !strings.Contains(route.GetMessage(), "colour") ||
		!slices.Contains(route.GetEntityTags(), "k8s-name:httpbin") || !slices.Contains(route.GetEntityTags(), "k8s-kind:Ingress") ||
		route.GetPreviousVersionKept() || route.GetDependsOn() != "" {
		t.Fatalf("excluded route %v", route)
	}
	if plugin == nil || plugin.GetDependsOn() != "route "+brokenRoute || !slices.Contains(plugin.GetEntityTags(), "k8s-kind:KongPlugin") {
		t.Fatalf("excluded plugin %v", plugin)
	}
	// Every other entity reaches the gateways.
	for i, g := range f.gws {
		got := keys(entities(t, g.Config()))
		var want []string
		for _, k := range keys(all) {
			if !strings.Contains(k, brokenRoute) && !strings.Contains(k, route.GetEntityId()) && !strings.Contains(k, plugin.GetEntityId()) {
				want = append(want, k)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("gateway %d holds %v\nwant %v", i, got, want)
		}
	}
	t.Logf("%s with route %s broken: %d entities sent whole, %d in the fallback", fallbackFixture, brokenRoute, len(all), len(all)-len(ex))

	// The metric and confighubctl status show them.
	maddr := f.hub.WaitOutput(t, metricsRE, 10*time.Second)
	if m := scrape(t, maddr); !strings.Contains(m, `confighub_sink_excluded_entities{kind="kong",sink="gw-0"} 2`+"\n") ||
		!strings.Contains(m, `confighub_sink_state{kind="kong",sink="gw-0",state="degraded"} 1`+"\n") {
		t.Fatalf("metrics lack the excluded entities of gw-0:\n%s", m)
	}
	ctl, err := exec.Command(bins.Path("confighubctl"), "--addr", f.hub.Addr, "status").CombinedOutput()
	t.Logf("confighubctl status:\n%s", ctl)
	if err != nil || !strings.Contains(string(ctl), "DEGRADED (2 excluded)") ||
		!strings.Contains(string(ctl), "  route "+brokenRoute+" (Ingress default/httpbin): colour: unknown field\n") {
		t.Fatalf("confighubctl status (%v):\n%s", err, ctl)
	}

	// A restarted gateway gets the fallback again, without a new 400.
	fbHash := f.gws[1].Hash()
	before := rejections(f.gws[1])
	f.gws[1].Restart()
	waitHash(t, f.gws[1:2], fbHash, "the fallback after a restart")
	if n := rejections(f.gws[1]); n != before {
		t.Fatalf("the restarted gateway was sent the rejected whole again (%d 400s, was %d)", n, before)
	}

	// The fix: every sink APPLIED, nothing excluded.
	gen = f.push(t, good)
	waitState(t, f, gen, confighubv1.SinkState_SINK_STATE_APPLIED)
	waitHash(t, f.gws, kongemu.ConfigHash(good), "the fixed configuration")
	if st := sinkStatus(t, f.api, "gw-0"); len(st.GetExcludedEntities()) != 0 || st.GetFallbackHash() != "" || st.GetAppliedGeneration() != gen {
		t.Fatalf("after the fix: %v", st)
	}
	if m := scrape(t, maddr); !strings.Contains(m, `confighub_sink_excluded_entities{kind="kong",sink="gw-0"} 0`+"\n") {
		t.Fatalf("after the fix the metric still counts excluded entities:\n%s", m)
	}

	// Broken again with a new path: its previous version (/httpbin) and
	// the plugin on it are kept.
	gen = f.push(t, breakRoute(t, good, true, "/httpbin-v2"))
	waitState(t, f, gen, confighubv1.SinkState_SINK_STATE_DEGRADED)
	st = sinkStatus(t, f.api, "gw-0")
	if ex := st.GetExcludedEntities(); len(ex) != 1 || ex[0].GetEntityName() != brokenRoute || !ex[0].GetPreviousVersionKept() {
		t.Fatalf("excluded %v, want the route with its previous version kept", ex)
	}
	for i, g := range f.gws {
		got := keys(entities(t, g.Config()))
		if !slices.Equal(got, keys(all)) {
			t.Fatalf("gateway %d holds %v\nwant every entity %v", i, got, keys(all))
		}
		if cfg := string(g.Config()); !strings.Contains(cfg, `"/httpbin"`) || strings.Contains(cfg, "httpbin-v2") {
			t.Fatalf("gateway %d does not hold the route's previous version: %s", i, cfg)
		}
	}
	gen = f.push(t, breakRoute(t, good, false, "/httpbin-v2"))
	waitState(t, f, gen, confighubv1.SinkState_SINK_STATE_APPLIED)
}
