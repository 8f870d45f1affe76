package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/metrics"
)

var (
	metricDef = regexp.MustCompile(`Name:\s*"(confighub_\w+)"`)
	metricRef = regexp.MustCompile(`\bconfighub_[a-z0-9_]+`)
)

// TestMetricsDocumented: docs/metrics.md has a row for every confighub_
// series the code registers, with every value of its state and result
// labels, and every confighub_ series the documents name is registered.
func TestMetricsDocumented(t *testing.T) {
	root := repoRoot(t)
	defined := map[string]bool{}
	walkGo(t, root, func(rel string, body []byte) {
		if !strings.HasSuffix(rel, "_test.go") {
			for _, m := range metricDef.FindAllSubmatch(body, -1) {
				defined[string(m[1])] = true
			}
		}
	})
	if len(defined) < 5 {
		t.Fatalf("found %d metric definitions: is metricDef right?", len(defined))
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for name := range defined {
		if !strings.Contains(md, "| `"+name+"` |") {
			t.Errorf("docs/metrics.md has no row for %s", name)
		}
	}
	for v := range confighubv1.SinkState_name {
		if s := confighubv1.SinkState(v); s != confighubv1.SinkState_SINK_STATE_UNSPECIFIED && !strings.Contains(md, "`"+metrics.StateLabel(s)+"`") {
			t.Errorf("docs/metrics.md does not list the state %q of confighub_sink_state", metrics.StateLabel(s))
		}
	}
	for _, r := range engine.Results() {
		if !strings.Contains(md, "`"+string(r)+"`") {
			t.Errorf("docs/metrics.md does not list the result %q of confighub_sink_applies_total", r)
		}
	}
	for name, doc := range markdown(t, root) {
		for _, m := range metricRef.FindAllString(doc, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if !defined[m] && !defined[base] {
				t.Errorf("%s names %s, which no code registers", name, m)
			}
		}
	}
}
