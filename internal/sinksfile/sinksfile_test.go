package sinksfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseYAMLList(t *testing.T) {
	sinks, err := Parse([]byte(`
- name: gw-0
  kong:
    address: http://127.0.0.1:8001
  options:
    timeout: 5s
    minInterval: 1s
- name: out
  stream: default
  file:
    path: /tmp/out.json
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(sinks) != 2 || sinks[0].GetKong().GetAddress() != "http://127.0.0.1:8001" || sinks[0].GetOptions().GetTimeout().AsDuration().Seconds() != 5 {
		t.Fatalf("unexpected sinks: %v", sinks)
	}
	if sinks[1].GetFile().GetPath() != "/tmp/out.json" {
		t.Fatalf("file spec not read: %v", sinks[1])
	}
}

func TestLoadErrorsNameFileAndEntry(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"not-a-list.yaml":   "name: x\n",
		"bad-yaml.yaml":     "- name: [\n",
		"unknown-key.yaml":  "- name: a\n  colour: red\n",
		"invalid-name.yaml": "- name: \"\"\n  file: {path: /tmp/x}\n",
	}
	for file, body := range cases {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil {
			t.Errorf("%s: want an error", file)
			continue
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error does not name the file: %v", file, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestGoDurationsAccepted(t *testing.T) {
	sinks, err := Parse([]byte(`
- name: gw
  kong: {address: "http://127.0.0.1:8001", status_interval: 1m30s}
  options:
    timeout: 1h
    min_interval: 250ms
    backoff: {initial: 0.05s, max: 2m}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := sinks[0].GetOptions()
	if o.GetTimeout().AsDuration() != time.Hour || o.GetMinInterval().AsDuration() != 250*time.Millisecond ||
		o.GetBackoff().GetMax().AsDuration() != 2*time.Minute || o.GetBackoff().GetInitial().AsDuration() != 50*time.Millisecond ||
		sinks[0].GetKong().GetStatusInterval().AsDuration() != 90*time.Second {
		t.Fatalf("durations not read: %v", sinks[0])
	}
	if _, err := Parse([]byte("- name: gw\n  options: {timeout: soon}\n")); err == nil || !strings.Contains(err.Error(), "options.timeout") {
		t.Fatalf("a bad duration must be named: %v", err)
	}
}

// TestErrorsPointAtTheUsersText: every error names the line and column in
// the file as written (YAML or JSON), the entry, and the field path as the
// user spelled it; never a position in an internal JSON form.
func TestErrorsPointAtTheUsersText(t *testing.T) {
	for _, c := range []struct {
		name, file, want string
	}{
		{"unknown nested field", "- name: out\n  file:\n    pth: /tmp/x.json\n",
			`line 3, column 5: entry 0 ("out"): file.pth: unknown field "pth"; file (FileSpec) has: format, path`},
		{"unknown top field", "- name: a\n  file: {path: /x}\n- name: b\n  colour: red\n",
			`line 4, column 3: entry 1 ("b"): colour: unknown field "colour"; a sink has: `},
		{"bare number duration", "- name: gw\n  kong: {address: \"http://h:8001\"}\n  options:\n    timeout: 10\n",
			`line 4, column 14: entry 0 ("gw"): options.timeout: the number 10 is not a duration: durations are strings such as "10s"`},
		{"camelCase path kept", "- name: gw\n  kong: {address: \"http://h:8001\"}\n  options:\n    backoff: {initial: 1s, max: 1.5}\n",
			`line 4, column 33: entry 0 ("gw"): options.backoff.max: the number 1.5 is not a duration`},
		{"bad duration text", "- name: gw\n  options: {minInterval: soon}\n",
			`line 2, column 26: entry 0 ("gw"): options.minInterval: "soon" is not a duration`},
		{"validation rule", "- name: gw\n  kong:\n    address: \"\"\n",
			`line 3, column 14: entry 0 ("gw"): kong.address: value is empty`},
		{"message as scalar", "- name: out\n  file: /tmp/x\n",
			`line 2, column 9: entry 0 ("out"): file: must be a mapping of FileSpec fields (format, path), found "/tmp/x"`},
		{"enum name", "- name: out\n  file: {path: /x, format: XML}\n",
			`line 2, column 28: entry 0 ("out"): file.format: "XML" is not one of FORMAT_UNSPECIFIED`},
		{"not a list", "name: out\n", `line 1, column 1: the file must be a list of sinks`},
		{"JSON", "[\n  {\"name\": \"out\",\n   \"file\": {\"pth\": \"/x\"}}\n]\n",
			`line 3, column 13: entry 0 ("out"): file.pth: unknown field "pth"`},
	} {
		_, err := Parse([]byte(c.file))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s...", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "proto:") {
			t.Errorf("%s: protojson's internal position leaks: %v", c.name, err)
		}
	}
}

// TestParseOneOrMany: confighubctl's sinks put takes one sink or a list;
// its errors point at the file too.
func TestParseOneOrMany(t *testing.T) {
	s, err := ParseOneOrMany([]byte("name: out\nfile: {path: /x}\n"))
	if err != nil || len(s) != 1 || s[0].GetFile().GetPath() != "/x" {
		t.Fatalf("one sink: %v %v", s, err)
	}
	if _, err := ParseOneOrMany([]byte("name: out\nfile: {pth: /x}\n")); err == nil || !strings.HasPrefix(err.Error(), `line 2, column 8: entry 0 ("out"): file.pth: unknown field`) {
		t.Fatalf("one sink, bad field: %v", err)
	}
	if _, err := Parse([]byte("name: out\nfile: {path: /x}\n")); err == nil {
		t.Fatal("Parse takes a list only")
	}
}
