package diffsync

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// changeOneRoute returns raw (JSON) with one route changed (its paths, or
// a tag for a route without paths) and the route's name; ok is false for
// a configuration without routes.
func changeOneRoute(t testing.TB, raw []byte) (out []byte, name string, ok bool) {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	var rt map[string]any
	services, _ := root["services"].([]any)
	for _, s := range services {
		routes, _ := s.(map[string]any)["routes"].([]any)
		if len(routes) > 0 {
			rt = routes[0].(map[string]any)
			break
		}
	}
	if top, _ := root["routes"].([]any); rt == nil && len(top) > 0 {
		rt = top[0].(map[string]any)
	}
	if rt == nil {
		return nil, "", false
	}
	if _, has := rt["paths"]; has {
		rt["paths"] = []any{"/changed-by-test"}
	} else {
		tags, _ := rt["tags"].([]any)
		rt["tags"] = append(tags, "changed-by-test")
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	name, _ = rt["name"].(string)
	return out, name, true
}

// fixtureRow is one line of the fixture table.
type fixtureRow struct {
	fixture, mode   string
	first, resync   int
	change          string
	firstErr, other string
}

// TestEveryFixtureResyncsWithoutWrites: every golden configuration is
// synced to a fresh destination that stores entities as Kong 3.9 does
// (defaults filled, served schemas), in DB mode and on a Konnect control
// plane; then synced again unchanged, which must send no write; then with
// one route changed, which must send exactly one write, a PUT of that
// route. The fixtures a destination refuses are the ones whose refusal
// is Kong's or the reconciler's (asserted by kind). Run with -v for the
// table of write counts.
func TestEveryFixtureResyncsWithoutWrites(t *testing.T) {
	var rows []fixtureRow
	for _, path := range harness.Fixtures(t) {
		name := filepath.Base(path)
		raw := mustJSON(t, harness.Fixture(t, name))
		for _, konnect := range []bool{false, true} {
			mode := "kong-db"
			if konnect {
				mode = "konnect"
			}
			t.Run(name+"/"+mode, func(t *testing.T) {
				row := fixtureRow{fixture: name, mode: mode}
				defer func() { rows = append(rows, row) }()
				var opts []kongemu.EntityOption
				if strings.Contains(name, "expression-routes-on") {
					// KIC renders these for a Kong whose router_flavor is
					// "expressions".
					opts = append(opts, kongemu.WithExpressionsRouter())
				}
				e := newEnv(t, opts...)
				base, cp, sopts := e.url, "", Options{}
				if konnect {
					cp = "cp"
					base, sopts = e.url+kongemu.KonnectPrefix+cp, Options{ControlPlane: cp}
				}
				s := e.syncer(t, base, sopts)

				_, err := s.Sync(ctxT(t), loadConfig(t, raw, 1))
				row.first = len(e.api.Writes())
				if err != nil {
					row.firstErr = refusal(name, konnect, err.Error())
					if row.firstErr == "" {
						t.Fatalf("first sync: %v", err)
					}
					return
				}
				assertMirrors(t, e.api, cp, raw)
				assertGroups(t, base, raw)

				e.api.ResetCounts()
				res, err := s.Sync(ctxT(t), loadConfig(t, raw, 2))
				row.resync = len(e.api.Writes())
				if err != nil || row.resync != 0 || res != (Result{}) {
					t.Errorf("unchanged resync: %v, writes %v (%+v)", err, e.api.Writes(), res)
				}

				changed, route, ok := changeOneRoute(t, raw)
				if !ok {
					row.change = "no route"
					return
				}
				e.api.ResetCounts()
				res, err = s.Sync(ctxT(t), loadConfig(t, changed, 3))
				w := e.api.Writes()
				row.change = fmt.Sprint(len(w))
				if err != nil || len(w) != 1 || !strings.HasPrefix(w[0], "PUT ") || !strings.Contains(w[0], "/routes/") ||
					res != (Result{Updated: 1}) {
					t.Errorf("one-route change (%s): %v, writes %v (%+v), want one PUT of the route", route, err, w, res)
				}
				assertMirrors(t, e.api, cp, changed)
			})
		}
	}
	if len(rows) != 2*len(harness.Fixtures(t)) {
		return
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].fixture < rows[j].fixture })
	var b strings.Builder
	b.WriteString("\n| fixture | kong-db first | resync | one-route change | konnect first | resync | one-route change |\n|---|---|---|---|---|---|---|\n")
	for i := 0; i+1 < len(rows); i += 2 {
		db, kn := rows[i], rows[i+1]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", strings.TrimSuffix(db.fixture, ".yaml"),
			cell(db.first, db.firstErr), cell(db.resync, db.firstErr), orDash(db.change, db.firstErr),
			cell(kn.first, kn.firstErr), cell(kn.resync, kn.firstErr), orDash(kn.change, kn.firstErr))
	}
	t.Log(b.String())
}

func cell(n int, refused string) string {
	if refused != "" {
		return refused
	}
	return fmt.Sprint(n)
}

func orDash(s, refused string) string {
	if refused != "" {
		return refused
	}
	return s
}

// refusal names why a destination refuses a fixture when that refusal is
// the expected answer, or "" when it is not expected.
func refusal(name string, konnect bool, msg string) string {
	switch {
	case name == "credentials__default.yaml" && strings.Contains(msg, "secret is required"):
		// deck's JSON schema wants HMAC and JWT secrets; KIC's output has
		// none (Kong would generate them).
		return "refused by the reconciler's reader (no secret)"
	case name == "fallback-config-kong-custom-entities-ee__default.yaml" && strings.Contains(msg, "service is required for degraphql_routes"):
		// KIC's fallback test output: degraphql routes without a service,
		// which Kong refuses too.
		return "refused by the reconciler (degraphql route without service)"
	case enterprise(name) && !konnect && strings.Contains(msg, "404"):
		return "refused by Kong OSS (Enterprise entities: 404)"
	case enterprise(name) && konnect && strings.Contains(msg, "404") && strings.Contains(msg, "degraphql_routes"):
		// Konnect has them; the emulator's control planes do not store
		// degraphql routes (see the emulator's doc).
		return "not emulated (Konnect degraphql routes)"
	}
	return ""
}

// TestDBLessCollectionsReadAsDeck: a controller's consumer_group_consumers
// and degraphql_routes (Kong's DB-less spelling) reach the reconciler as
// consumer groups and custom entities, instead of a reader error.
func TestDBLessCollectionsReadAsDeck(t *testing.T) {
	e := newEnv(t)
	s := e.syncer(t, e.url, Options{})
	raw := mustJSON(t, harness.Fixture(t, "consumer-group-example-ee__default.yaml"))
	content, err := s.readContent(deckForm(raw))
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	groups := map[string][]string{}
	for _, c := range content.Consumers {
		for _, g := range c.Groups {
			groups[*c.Username] = append(groups[*c.Username], *g.Name)
		}
	}
	if fmt.Sprint(groups) != "map[consumer-1:[consumer-group-1] consumer-2:[consumer-group-1 consumer-group-2]]" {
		t.Errorf("consumer groups of consumers: %v", groups)
	}
	raw = mustJSON(t, harness.Fixture(t, "kong-custom-entity-ee__default.yaml"))
	content, err = s.readContent(deckForm(raw))
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	if len(content.CustomEntities) == 0 || *content.CustomEntities[0].Type != "degraphql_routes" ||
		content.CustomEntities[0].Fields["service"] == nil {
		t.Errorf("custom entities: %+v", content.CustomEntities)
	}
}

// assertGroups fails unless each consumer group of raw's
// consumer_group_consumers holds exactly its consumers at the destination
// (GET /consumer_groups/<name>, which lists them).
func assertGroups(t *testing.T, base string, raw []byte) {
	t.Helper()
	var root struct {
		Members []struct {
			Consumer string `json:"consumer"`
			Group    string `json:"consumer_group"`
		} `json:"consumer_group_consumers"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, m := range root.Members {
		want[m.Group] = append(want[m.Group], m.Consumer)
	}
	for group, consumers := range want {
		resp, err := http.Get(base + "/consumer_groups/" + group)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Consumers []struct {
				Username string `json:"username"`
			} `json:"consumers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		var names []string
		for _, c := range got.Consumers {
			names = append(names, c.Username)
		}
		sort.Strings(names)
		sort.Strings(consumers)
		if err != nil || fmt.Sprint(names) != fmt.Sprint(consumers) {
			t.Errorf("consumer group %s holds %v (%v), want %v", group, names, err, consumers)
		}
	}
}
