package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/confighub/confighub/test/harness"
)

// TestHistoryDiffRollback: two pushes of a KIC fixture (a password and a
// port changed), history lists both with their pusher and entity counts,
// diff prints one line per entity as deck diff does with no secret in it
// (text and JSON), rollback makes a third generation of the first one's
// bytes, and bad input gets the API's codes.
func TestHistoryDiffRollback(t *testing.T) {
	addr := startHub(t, hubOpts{})
	g := []string{"--addr", addr}
	raw := harness.Fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml")
	changed := bytes.Replace(raw, []byte("consumer-1-password"), []byte("consumer-1-new-password"), 1)
	changed = bytes.Replace(changed, []byte("  port: 80\n"), []byte("  port: 8080\n"), 1)
	if bytes.Equal(changed, raw) {
		t.Fatal("the fixture changed no more")
	}
	mustCtl(t, append(g, "push", "-f", writeFile(t, "a.yaml", string(raw)), "--label", "commit=a")...)
	mustCtl(t, append(g, "push", "-f", writeFile(t, "b.yaml", string(changed)), "--label", "commit=b")...)

	hist := mustCtl(t, append(g, "history")...)
	for _, re := range []string{`(?m)^GENERATION\s+ACCEPTED\s+PUSHER\s+PEER`, `(?m)^2\s+\S+ ago\s+anonymous\s+127\.0\.0\.1:\d+\s+.*\d+ routes?.*commit=b$`, `(?m)^1\s.*commit=a$`} {
		if !regexp.MustCompile(re).MatchString(hist) {
			t.Errorf("history does not match %s:\n%s", re, hist)
		}
	}

	diff := mustCtl(t, append(g, "diff")...)
	for _, want := range []string{
		"stream default: generation 1 (",
		"updating service bar-namespace.foo-svc.80 [Service bar-namespace/foo-svc]\n  port: 80 -> 8080\n",
		"updating basicauth_credential consumer-1 (consumer consumer) [Secret default/consumer-basic-auth]\n  password: \"<redacted>\" -> \"<redacted>\"\n",
		"Summary:\n  Created: 0\n  Updated: 2\n  Deleted: 0\n",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "\x1b[") {
		t.Errorf("colour when not on a terminal:\n%q", diff)
	}
	if c := mustCtl(t, append(g, "diff", "--color", "always", "1", "2")...); !strings.Contains(c, "\x1b[33mupdating service") {
		t.Errorf("diff --color always:\n%q", c)
	}
	js := mustCtl(t, append(g, "--output", "json", "diff", "1", "2")...)
	var parsed struct {
		Changes []struct{ Type, Name string }
		Updated int
	}
	if err := json.Unmarshal([]byte(js), &parsed); err != nil || parsed.Updated != 2 || len(parsed.Changes) != 2 {
		t.Fatalf("diff json: %v %+v\n%s", err, parsed, js)
	}
	for _, out := range []string{diff, js} {
		if strings.Contains(out, "consumer-1-password") || strings.Contains(out, "consumer-1-new-password") || strings.Contains(out, "PRIVATE KEY") {
			t.Fatalf("a secret in the diff:\n%s", out)
		}
	}

	res := mustCtl(t, append(g, "rollback", "1")...)
	if !strings.Contains(res, "generation 3 is generation 1's configuration") {
		t.Fatalf("rollback: %q", res)
	}
	if d := mustCtl(t, append(g, "diff", "1", "3")...); !strings.Contains(d, "Updated: 0") {
		t.Fatalf("generation 3 differs from 1:\n%s", d)
	}
	if hist := mustCtl(t, append(g, "history")...); !regexp.MustCompile(`(?m)^3\s.*rollback to 1 commit=a`).MatchString(hist) {
		t.Errorf("history does not show the rollback:\n%s", hist)
	}
	if res := mustCtl(t, append(g, "rollback", "1")...); !strings.Contains(res, "unchanged") {
		t.Errorf("rollback to the current hash: %q", res)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rollback", "2", "--expected-generation", "2"}, 1, "confighubctl: rollback: FailedPrecondition: "},
		{[]string{"rollback", "99"}, 1, "confighubctl: rollback: NotFound: "},
		{[]string{"diff", "99"}, 1, "confighubctl: diff: NotFound: "},
		{[]string{"diff", "x"}, 2, "is not a generation"},
		{[]string{"rollback"}, 2, "want one GENERATION"},
		{[]string{"diff", "--sink", "nope"}, 1, "NotFound"},
	} {
		code, _, errs := ctl(t, append(g, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("confighubctl %s: exit %d %q, want %d with %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.want)
		}
	}
}
