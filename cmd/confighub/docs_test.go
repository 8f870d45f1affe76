package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/confighub/confighub/test/harness"
)

var (
	helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	// hubCommand is a command line that runs the hub (not confighubctl or
	// confighub-bench): confighub at the start of a line, code span or
	// shell command, or as a path (./cmd/confighub, bin/confighub), up to
	// the end of its code span or shell command.
	hubCommand = regexp.MustCompile("(?m)(?:^\\s*|`|/|\\$ |&& )confighub[ \t]+([^`|;&\n]*)")
	dashFlag   = regexp.MustCompile(`--([a-z][a-z0-9-]*)(\*?)`)
)

// hubFlags are the names of the hub's flags, read from its --help.
func hubFlags(t *testing.T) (map[string]bool, string) {
	t.Helper()
	var help strings.Builder
	if _, err := parseFlags([]string{"--help"}, &help); err == nil {
		t.Fatal("--help parsed without flag.ErrHelp")
	}
	names := map[string]bool{"help": true}
	for _, m := range helpFlag.FindAllStringSubmatch(help.String(), -1) {
		names[m[1]] = true
	}
	if !names["listen"] || !names["data-dir"] {
		t.Fatalf("no flags read from --help:\n%s", help.String())
	}
	return names, help.String()
}

// known reports whether a --name (or a --prefix-* family) is a hub flag.
func known(flags map[string]bool, name string, family bool) bool {
	if !family {
		return flags[name]
	}
	for f := range flags {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}

// TestHelpNamesItsOwnFlags: every --flag the --help text mentions in a
// flag's description is a flag of the hub.
func TestHelpNamesItsOwnFlags(t *testing.T) {
	flags, help := hubFlags(t)
	for _, m := range dashFlag.FindAllStringSubmatch(help, -1) {
		if !known(flags, m[1], m[2] == "*") {
			t.Errorf("--help mentions --%s%s, which is not a flag of the hub", m[1], m[2])
		}
	}
}

// TestDocsRunTheHubWithItsFlags: every command line of README.md,
// docs/*.md and deploy/README.md that runs the hub (confighub ...,
// ./cmd/confighub ...) passes only flags the hub has; a helm command line
// naming the chart (deploy/helm/confighub) is not one.
func TestDocsRunTheHubWithItsFlags(t *testing.T) {
	flags, _ := hubFlags(t)
	root := harness.RepoRoot()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "README.md"))
	var bad []string
	runs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ") // shell line continuations
		for _, idx := range hubCommand.FindAllStringSubmatchIndex(text, -1) {
			lineStart := strings.LastIndexByte(text[:idx[0]], '\n') + 1
			if strings.Contains(text[lineStart:idx[0]], "helm ") {
				continue // helm install deploy/helm/confighub --set ...: the chart, not the hub
			}
			runs++
			for _, fl := range dashFlag.FindAllStringSubmatch(text[idx[2]:idx[3]], -1) {
				if !known(flags, fl[1], fl[2] == "*") {
					rel, _ := filepath.Rel(root, f)
					bad = append(bad, rel+": confighub --"+fl[1])
				}
			}
		}
	}
	if runs < 5 {
		t.Fatalf("found %d hub command lines in the documents: is hubCommand right?", runs)
	}
	slices.Sort(bad)
	if bad = slices.Compact(bad); len(bad) > 0 {
		t.Errorf("the documents run the hub with flags it does not have:\n  %s", strings.Join(bad, "\n  "))
	}
}
