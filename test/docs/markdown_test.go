package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// markdown are the user-facing documents whose commands, flags and paths
// are checked against the repository.
func markdown(t *testing.T, root string) map[string]string {
	t.Helper()
	var names []string
	for _, glob := range []string{"README.md", "docs/*.md", "deploy/README.md", "examples/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	if len(names) < 9 {
		t.Fatalf("found %d documents, want README.md, docs/*.md and the other READMEs", len(names))
	}
	docs := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, n)
		docs[filepath.ToSlash(rel)] = string(b)
	}
	return docs
}

var (
	fence      = regexp.MustCompile("(?s)```.*?```")
	inlineCode = regexp.MustCompile("`[^`\n]+`")
	makeCmd    = regexp.MustCompile(`(?:^|[\s$])make\s+([a-z][\w-]*)`)
	makeTarget = regexp.MustCompile(`(?m)^([a-z][\w-]*)\s*:`)
	flagRef    = regexp.MustCompile(`(?:^|[\s\x60(\[|])--([a-z][a-z0-9-]+)`)
	// flagDef is a flag defined with the flag package: fs.StringVar(&v,
	// "name", ...), fs.Bool("name", ...), fs.Func("name", ...).
	flagDef = regexp.MustCompile(`\.(?:String|Bool|Int|Int64|Uint|Uint64|Float64|Duration|Func|BoolFunc|TextVar|Var)(?:Var)?\(\s*(?:[^,()"]+,\s*)?"([a-z][a-z0-9-]*)"`)
	// repoPath is a path of the repository named in prose or code; a path
	// inside another path ("/etc/confighub/...") or URL is not one.
	repoPath   = regexp.MustCompile(`(?:^|[\s\x60(\[])((?:internal|clients|cmd|examples|api|test|deploy|docs|sink|config|scripts|testdata|hubclient|engine|store|server|hub|cluster|auth|metrics|redact|sinksfile)/[\w./*-]*)`)
	importPath = regexp.MustCompile(`github\.com/confighub/confighub((?:/[\w.-]+)*)`)
)

// code is the text of a document's code: fenced blocks and inline spans.
func code(doc string) string {
	var b strings.Builder
	for _, m := range fence.FindAllString(doc, -1) {
		b.WriteString(m + "\n")
	}
	for _, m := range inlineCode.FindAllString(fence.ReplaceAllString(doc, ""), -1) {
		b.WriteString(m + "\n")
	}
	return b.String()
}

// TestDocsMakeTargetsExist: every `make <target>` the documents show is a
// target of the Makefile.
func TestDocsMakeTargetsExist(t *testing.T) {
	root := repoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	var bad []string
	for name, doc := range markdown(t, root) {
		for _, m := range makeCmd.FindAllStringSubmatch(code(doc), -1) {
			if !targets[m[1]] {
				bad = append(bad, name+": make "+m[1])
			}
		}
	}
	report(t, "make targets the Makefile does not have", bad)
}

// externalFlags are flags of other programs the documents show (kubectl,
// git, etcd, Kong Ingress Controller), and the arrow of a diagram.
var externalFlags = map[string]string{
	"from-file":                          "kubectl create secret",
	"short":                              "git rev-parse",
	"auto-compaction-retention":          "etcd",
	"quota-backend-bytes":                "etcd",
	"max-request-bytes":                  "etcd",
	"use-last-valid-config-for-fallback": "Kong Ingress Controller (docs/fallback.md compares it)",
	"check":                              "docs/architecture.md's diagram: --check || stage+hash-->",
	"set":                                "helm install",
	"set-file":                           "helm install",
}

// TestDocsMentionExistingFlags: every --flag the documents mention is a
// flag of one of the repository's commands (cmd/*, examples/*,
// test/kongemu/cmd/*) or of an
// external program listed in externalFlags.
func TestDocsMentionExistingFlags(t *testing.T) {
	root := repoRoot(t)
	defined := map[string]bool{"help": true}
	walkGo(t, root, func(rel string, body []byte) {
		if (strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "examples/") || strings.HasPrefix(rel, "test/kongemu/cmd/")) && !strings.HasSuffix(rel, "_test.go") {
			for _, m := range flagDef.FindAllSubmatch(body, -1) {
				defined[string(m[1])] = true
			}
		}
	})
	for _, f := range []string{"listen", "data-dir", "sinks", "auth-tokens", "etcd-endpoints", "addr", "stream"} {
		if !defined[f] {
			t.Fatalf("flag definitions not found (no --%s): is flagDef right?", f)
		}
	}
	var bad []string
	for name, doc := range markdown(t, root) {
		for _, m := range flagRef.FindAllStringSubmatch(doc, -1) {
			if !defined[m[1]] && externalFlags[m[1]] == "" {
				bad = append(bad, name+": --"+m[1])
			}
		}
	}
	report(t, "flags no command defines", bad)
}

// notInRepo are paths the documents name that are not files of this
// repository: another project's, or made at run time.
var notInRepo = map[string]string{
	"internal/dataplane/kong_client.go":  "Kong/kubernetes-ingress-controller",
	"internal/dataplane/synchronizer.go": "Kong/kubernetes-ingress-controller",
}

// TestDocsNamePathsThatExist: every repository path (internal/engine/doc.go,
// clients/kong, cmd/confighub) and Go import path of this module the
// documents name exists, so a moved package cannot leave its old path in
// the documents.
func TestDocsNamePathsThatExist(t *testing.T) {
	root := repoRoot(t)
	var bad []string
	exists := func(p string) bool {
		if strings.ContainsAny(p, "*") {
			m, _ := filepath.Glob(filepath.Join(root, p))
			return len(m) > 0
		}
		_, err := os.Stat(filepath.Join(root, p))
		return err == nil
	}
	for name, doc := range markdown(t, root) {
		for _, m := range repoPath.FindAllStringSubmatch(doc, -1) {
			p := strings.TrimRight(m[1], ".")
			if notInRepo[p] == "" && !exists(p) {
				bad = append(bad, name+": "+p)
			}
		}
		for _, m := range importPath.FindAllStringSubmatch(doc, -1) {
			if p := strings.TrimPrefix(strings.TrimRight(m[1], "."), "/"); p != "" && !exists(p) {
				bad = append(bad, name+": github.com/confighub/confighub/"+p)
			}
		}
	}
	report(t, "paths that do not exist", bad)
}

func report(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	sort.Strings(bad)
	bad = slices.Compact(bad)
	t.Errorf("the documents name %s (%d):\n  %s", what, len(bad), strings.Join(bad, "\n  "))
}

var benchRow = regexp.MustCompile("(?m)^\\| (`[^|]+`) \\| ([^|]+) \\|")

// TestBenchmarkTableIsComplete: the micro-benchmark table of
// docs/performance.md names every benchmark of the repository, each in a
// package (a folder) that declares it.
func TestBenchmarkTableIsComplete(t *testing.T) {
	root := repoRoot(t)
	declared := map[string][]string{} // benchmark -> folders
	walkGo(t, root, func(rel string, body []byte) {
		if strings.HasSuffix(rel, "_test.go") {
			for _, m := range funcDecl.FindAllSubmatch(body, -1) {
				if strings.HasPrefix(string(m[1]), "Benchmark") {
					declared[string(m[1])] = append(declared[string(m[1])], path.Dir(rel))
				}
			}
		}
	})
	table := section(t, root, "docs/performance.md", "Micro-benchmarks")
	var bad []string
	listed := map[string]bool{}
	for _, row := range benchRow.FindAllStringSubmatch(table, -1) {
		pkgs := strings.Split(strings.ReplaceAll(row[1], "`", ""), ", ")
		for _, name := range regexp.MustCompile(`Benchmark\w+`).FindAllString(row[2], -1) {
			listed[name] = true
			if !slices.ContainsFunc(pkgs, func(p string) bool { return slices.Contains(declared[name], p) }) {
				bad = append(bad, name+" listed in "+row[1]+where(declared[name]))
			}
		}
	}
	for name, dirs := range declared {
		if !listed[name] {
			bad = append(bad, name+" not listed"+where(dirs))
		}
	}
	report(t, "micro-benchmarks wrongly", bad)
}

// TestReadmeLayoutNamesEveryPackage: the layout table of README.md names
// every folder directly under internal/, test/, clients/ and cmd/, so a new
// or moved package is not missing from the map.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	layout := section(t, root, "README.md", "Layout")
	var bad []string
	for _, parent := range []string{"internal", "test", "clients", "cmd"} {
		ents, err := os.ReadDir(filepath.Join(root, parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !e.IsDir() || skipDir(e.Name()) {
				continue
			}
			full := parent + "/" + e.Name()
			short := "`" + e.Name() + "`" // a row such as clients/: `kong`, `file`
			if !strings.Contains(layout, full) && !strings.Contains(layout, short) {
				bad = append(bad, full)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("README.md's layout does not name %s", strings.Join(bad, ", "))
	}
}

// section is the text of a document's "## heading" section.
func section(t *testing.T, root, doc, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "## "+heading)
	if !ok {
		t.Fatalf("%s has no %s section", doc, heading)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	return text
}
