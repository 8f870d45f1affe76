package deploytest

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

// metricName is how the hub's code and go-grpc-middleware's Prometheus
// provider name a series they register.
var metricName = regexp.MustCompile(`Name:\s*"((?:confighub|grpc_server)_\w+)"`)

// registeredMetrics are the series the hub registers, found as
// test/docs/metrics_test.go finds them: the confighub_ names in the
// repository's Go code outside tests, and the grpc_server_ names of the
// go-grpc-middleware provider the hub registers (internal/metrics).
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	collect := func(body []byte) {
		for _, m := range metricName.FindAllSubmatch(body, -1) {
			names[string(m[1])] = true
		}
	}
	usesProvider := false
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", "third_party", "test", "deploy", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(body), "grpcprom.NewServerMetrics(") {
			usesProvider = true
		}
		collect(body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !usesProvider {
		t.Fatal("no hub code calls grpcprom.NewServerMetrics: the grpc_server_ series are not registered")
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus")
	list.Dir = root
	dir, err := list.Output()
	if err != nil {
		t.Fatalf("go list the gRPC provider: %v", err)
	}
	body, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "server_metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	collect(body)
	for _, want := range []string{"confighub_sink_state", "grpc_server_handled_total"} {
		if !names[want] {
			t.Fatalf("found no %s among %v: is metricName right?", want, names)
		}
	}
	return names
}

// grafanaVars are the dashboard's variables in a range or a label value,
// replaced by a literal before parsing (Grafana expands them before
// Prometheus sees the query).
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// namedMetrics are the metric names a query's selectors name.
func namedMetrics(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			names = append(names, name)
		}
		return nil
	})
	return names
}

// TestDashboardQueries: every query of deploy/grafana/confighub.json parses
// with Prometheus' parser and names only series the hub registers (a
// histogram's _bucket, _sum and _count included), every panel has a query,
// and the dashboard covers convergence, sink states, applies, pushes,
// watchers and the bounds.
func TestDashboardQueries(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "confighub.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string  `json:"uid"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	registered := registeredMetrics(t)
	known := func(name string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && registered[base] {
				return true
			}
		}
		return false
	}
	promql := parser.NewParser(parser.Options{})
	used := map[string]bool{}
	queries := 0
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				queries++
				expr, err := promql.ParseExpr(grafanaVars.Replace(tg.Expr))
				if err != nil {
					t.Errorf("panel %q query %s does not parse: %v\n%s", p.Title, tg.RefID, err, tg.Expr)
					continue
				}
				names := namedMetrics(expr)
				if len(names) == 0 {
					t.Errorf("panel %q query %s names no metric: %s", p.Title, tg.RefID, tg.Expr)
				}
				for _, n := range names {
					used[n] = true
					if !known(n) {
						t.Errorf("panel %q query %s names %s, which the hub does not register", p.Title, tg.RefID, n)
					}
				}
			}
		}
	}
	walk(dash.Panels)
	if queries < 10 {
		t.Fatalf("found %d queries: is the panel layout read right?", queries)
	}
	for _, want := range []string{
		"confighub_stream_convergence_seconds_bucket",  // convergence time per stream
		"confighub_sink_state",                         // sinks by state
		"confighub_sink_apply_duration_seconds_bucket", // apply durations per kind
		"confighub_sink_applies_total",                 // errors by code per kind
		"grpc_server_handled_total",                    // push rate, watchers
		"grpc_server_handling_seconds_bucket",          // ack latency
		"grpc_server_started_total",                    // watchers
	} {
		if !used[want] {
			t.Errorf("the dashboard has no panel on %s", want)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((\w+),\s*\w+\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil || !known(m[1]) {
			t.Errorf("variable %s: %q is not label_values of a registered metric", v.Name, v.Definition)
		}
	}
}
