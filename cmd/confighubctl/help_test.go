package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

var (
	helpFlagLine = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	synopsisFlag = regexp.MustCompile(`(?:^|[\s\[])--?([a-z][a-z0-9-]*)`)
)

// TestHelpNamesRealFlags: every flag the top-level usage and each
// command's synopsis show is a flag of that command (its --help lists it).
func TestHelpNamesRealFlags(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		var out, errw strings.Builder
		if code := runContext(context.Background(), append(args, "--help"), &out, &errw); code != 0 {
			t.Fatalf("%v --help exited %d: %s", args, code, errw.String())
		}
		return out.String() + errw.String()
	}
	// The commands, and the first words of their entries in usage.
	for _, cmd := range [][]string{{"push"}, {"status"}, {"sinks", "list"}, {"sinks", "put"}, {"sinks", "delete"}, {"streams", "list"}, {"streams", "delete"}, {"config", "get"}} {
		text := help(cmd...)
		flags := map[string]bool{"help": true}
		for _, m := range helpFlagLine.FindAllStringSubmatch(text, -1) {
			flags[m[1]] = true
		}
		if !flags["addr"] {
			t.Fatalf("%v --help lists no global flags:\n%s", cmd, text)
		}
		synopsis, _, _ := strings.Cut(text, "\n\n")
		entry := usageEntry(strings.Join(cmd, " "))
		if entry == "" {
			t.Errorf("the usage text has no entry for %q", strings.Join(cmd, " "))
		}
		for _, m := range synopsisFlag.FindAllStringSubmatch(synopsis+"\n"+entry, -1) {
			if !flags[m[1]] {
				t.Errorf("%v: the help shows -%s, which is not one of its flags", cmd, m[1])
			}
		}
	}
}

// usageEntry is a command's entry in the top-level usage: its line and the
// continuation lines of its flags, without the description.
func usageEntry(cmd string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(usage) {
		switch {
		case strings.HasPrefix(line, "  "+cmd+" ") || strings.TrimSpace(line) == cmd:
			in = true
		case in && strings.HasPrefix(strings.TrimSpace(line), "["):
		default:
			in = false
		}
		if in {
			// the description starts after a run of spaces
			if i := strings.Index(line, "    "); i > 2 {
				line = line[:i]
			}
			b.WriteString(line)
		}
	}
	return b.String()
}
