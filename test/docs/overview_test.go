package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Limits of the package overviews: a doc.go is the package's job, its place
// in the data flow and one line per guarantee; the reasoning sits on types.
const (
	maxDocGoLines   = 60
	maxDocGoLinesIn = 900 // all doc.go files together
)

// historyRef is a reference to the project's own history: an issue number or
// a session. Comments and docs say what is true now; history is in git.
var historyRef = regexp.MustCompile(`(?i)\bissues? #?\d+|\b(this|that|the previous|other|earlier) sessions?\b|\bsession \d+`)

// TestDocGoIsAnOverview: no doc.go is over 60 lines, all of them together at
// most 900, and no Go comment, README or doc under docs/ names an issue
// number or a session.
func TestDocGoIsAnOverview(t *testing.T) {
	root := repoRoot(t)
	total := 0
	var long, history []string
	walkGo(t, root, func(rel string, body []byte) {
		if path.Base(rel) == "doc.go" {
			n := strings.Count(string(body), "\n")
			total += n
			if n > maxDocGoLines {
				long = append(long, rel)
			}
		}
		for i, line := range strings.Split(string(body), "\n") {
			if c := strings.Index(line, "//"); c >= 0 && historyRef.MatchString(line[c:]) {
				history = append(history, rel+":"+strconv.Itoa(i+1))
			}
		}
	})
	for name, doc := range markdown(t, root) {
		for i, line := range strings.Split(doc, "\n") {
			if historyRef.MatchString(line) {
				history = append(history, name+":"+strconv.Itoa(i+1))
			}
		}
	}
	if len(long) > 0 {
		t.Errorf("doc.go over %d lines (move the reasoning onto the types it explains): %s", maxDocGoLines, strings.Join(long, ", "))
	}
	if total > maxDocGoLinesIn {
		t.Errorf("doc.go files hold %d lines together, more than %d", total, maxDocGoLinesIn)
	}
	if len(history) > 0 {
		t.Errorf("comments or docs name an issue number or a session (history belongs in commits): %s", strings.Join(history, ", "))
	}
	if _, err := os.Stat(filepath.Join(root, "docs", "performance.md")); err == nil {
		b, _ := os.ReadFile(filepath.Join(root, "docs", "performance.md"))
		if n := strings.Count(string(b), "\n"); n > 300 {
			t.Errorf("docs/performance.md is %d lines, more than 300: keep the method, the latest table and what bounds it", n)
		}
	}
}
