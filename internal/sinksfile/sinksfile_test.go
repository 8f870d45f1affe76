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
