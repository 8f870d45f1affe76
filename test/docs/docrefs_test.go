package docs

import (
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

var (
	// testRef is a test, benchmark or fuzz target named in prose, with an
	// optional subtest ("TestConformance/WatchResumeGap").
	testRef = regexp.MustCompile(`\b(Test[A-Z]\w*|Benchmark[A-Z_]\w*|Fuzz[A-Z]\w*)(/\w+)?`)
	// funcDecl is a function or method declaration.
	funcDecl = regexp.MustCompile(`(?m)^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*[\[(]`)
	// qualBefore is the package that precedes a name: "engine's TestX",
	// "status.TestX", "e2e TestX", "examples/controller TestX".
	qualBefore = regexp.MustCompile(`([A-Za-z0-9_/-]*[A-Za-z0-9_])(?:'s|')?\.?\s*$`)
	// qualAfter is the package that follows a name: "TestX in clients/kong".
	qualAfter = regexp.MustCompile(`^\s+in\s+([A-Za-z0-9_/-]*[A-Za-z0-9_])`)
	space     = regexp.MustCompile(`\s+`)
)

// TestDocGoNamesExistingTests reads every doc.go of both modules and checks
// that each test it names as evidence exists: a func of that name in the
// package's folder or, when the doc qualifies the name with another package
// ("engine's TestX", "hubclienttest.TestX", "e2e TestX", "TestX in
// internal/diffsync"), in that package's folder. A subtest
// ("TestConformance/WatchResumeGap") must also appear as a quoted name in
// the repository's Go code.
func TestDocGoNamesExistingTests(t *testing.T) {
	root := repoRoot(t)
	funcs := map[string][]string{} // name -> folders declaring it
	var quoted strings.Builder     // every Go file, to find subtest names
	var docs []string
	walkGo(t, root, func(rel string, body []byte) {
		dir := path.Dir(rel)
		for _, m := range funcDecl.FindAllSubmatch(body, -1) {
			funcs[string(m[1])] = append(funcs[string(m[1])], dir)
		}
		if strings.HasSuffix(rel, "_test.go") || strings.Contains(dir, "test") {
			quoted.Write(body)
		}
		if path.Base(rel) == "doc.go" {
			docs = append(docs, rel)
		}
	})
	if len(docs) < 30 {
		t.Fatalf("found %d doc.go files, want the repository's (30 or more): is the root right?", len(docs))
	}
	sort.Strings(docs)
	var dangling []string
	for _, rel := range docs {
		text := docComments(t, root, rel)
		dir := path.Dir(rel)
		for _, m := range testRef.FindAllStringSubmatchIndex(text, -1) {
			name := text[m[2]:m[3]]
			ref := text[m[0]:m[1]]
			var quals []string
			if q := qualBefore.FindStringSubmatch(text[:m[0]]); q != nil {
				quals = append(quals, q[1])
			}
			if q := qualAfter.FindStringSubmatch(text[m[1]:]); q != nil {
				quals = append(quals, q[1])
			}
			if !declared(funcs[name], dir, quals) {
				dangling = append(dangling, rel+": "+ref+where(funcs[name]))
				continue
			}
			if m[4] >= 0 {
				sub := text[m[4]+1 : m[5]]
				if !strings.Contains(quoted.String(), `"`+sub+`"`) {
					dangling = append(dangling, rel+": "+ref+" (no subtest "+sub+")")
				}
			}
		}
	}
	if len(dangling) > 0 {
		t.Errorf("doc.go names tests that do not exist there (%d):\n  %s", len(dangling), strings.Join(dangling, "\n  "))
	}
}

// docComments is the prose of every comment of a doc.go (code blocks left
// out), with runs of white space made one space so a qualifier wrapped onto the previous line counts.
func docComments(t *testing.T, root, rel string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path.Join(root, rel), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, cg := range f.Comments {
		for line := range strings.Lines(cg.Text()) {
			if !strings.HasPrefix(line, "\t") { // a code block is an example, not evidence
				b.WriteString(line)
			}
		}
		b.WriteByte(' ')
	}
	return space.ReplaceAllString(b.String(), " ")
}

// declared reports whether a name declared in dirs is the one the doc
// means: in the doc's own folder, or in the folder one of its qualifiers
// names (a path suffix such as "server" or "examples/controller").
func declared(dirs []string, dir string, quals []string) bool {
	if slices.Contains(dirs, dir) {
		return true
	}
	for _, d := range dirs {
		for _, q := range quals {
			if d == q || strings.HasSuffix(d, "/"+q) {
				return true
			}
		}
	}
	return false
}

func where(dirs []string) string {
	if len(dirs) == 0 {
		return " (declared nowhere)"
	}
	return " (declared in " + strings.Join(slices.Compact(slices.Sorted(slices.Values(dirs))), ", ") + ")"
}
