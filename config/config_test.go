package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/test/harness"
)

func fixtures(t testing.TB) []string { return harness.Fixtures(t) }

func TestCheckAcceptsEveryFixture(t *testing.T) {
	for _, f := range fixtures(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Check(raw, FormatUnknown)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if c.Format != FormatYAML || c.FormatVersion != "3.0" {
			t.Errorf("%s: format %v version %q", filepath.Base(f), c.Format, c.FormatVersion)
		}
		// The JSON form is what sigs.k8s.io/yaml makes of it (the strict
		// conversion reads YAML as it does), and passes the JSON path too.
		if want, err := yaml.YAMLToJSON(raw); err != nil || string(c.JSON) != string(want) {
			t.Errorf("%s: JSON form differs from sigs.k8s.io/yaml's (%v)", filepath.Base(f), err)
		}
		if _, err := Check(c.JSON, FormatJSON); err != nil {
			t.Errorf("%s as JSON: %v", filepath.Base(f), err)
		}
	}
}

func TestCheckRejectsWithClearMessage(t *testing.T) {
	cases := []struct {
		name string
		in   string
		f    Format
		want string
	}{
		{"empty", "", FormatUnknown, "empty"},
		{"broken json", `{"_format_version":"3.0",`, FormatUnknown, "not valid JSON"},
		{"json array", `[1,2]`, FormatJSON, "mapping"},
		{"yaml scalar", "hello world", FormatUnknown, "mapping"},
		{"bad yaml", "a: [1,\n", FormatYAML, "not valid YAML"},
		{"no version", `{"services":[]}`, FormatUnknown, "_format_version is missing"},
		{"numeric version", `{"_format_version":3}`, FormatUnknown, "must be a string (Kong accepts [1.1 2.1 3.0]), got 3 (a number)"},
		{"unknown version", "_format_version: \"9.9\"\n", FormatUnknown, `"9.9" is not supported`},
		{"binary", "\x00\x01\x02", FormatUnknown, "YAML"},
		// Strict where parsers disagree (Kong keeps the last of two keys,
		// the hub's lookup the first).
		{"duplicate version", `{"_format_version":"3.0","_format_version":"9.9","services":[]}`, FormatUnknown, "duplicate key _format_version"},
		{"duplicate nested key", `{"_format_version":"3.0","consumers":[{"username":"u","keyauth_credentials":[{"key":"A","key":"B"}]}]}`, FormatJSON,
			"duplicate key consumers[0].keyauth_credentials[0].key"},
		{"invalid UTF-8", "{\"_format_version\":\"3.0\",\"services\":[{\"name\":\"\xff\"}]}", FormatJSON, "invalid UTF-8 in a string at byte 46 (in services[0].name)"},
		{"deep JSON", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), FormatJSON, "nesting is too deep at byte 10000: objects and arrays may nest at most 10000 levels"},
		{"duplicate YAML version", "_format_version: \"3.0\"\n_format_version: \"9.9\"\n", FormatYAML, "duplicate key _format_version"},
		{"duplicate nested YAML key", "_format_version: \"3.0\"\nconsumers:\n- username: u\n  keyauth_credentials:\n  - key: A\n    key: B\n", FormatYAML,
			"duplicate key consumers[0].keyauth_credentials[0].key"},
		{"YAML keys equal as JSON keys", "_format_version: \"3.0\"\nx:\n  1: a\n  \"1\": b\n", FormatYAML, "duplicate key x[\"1\"]"},
		{"two YAML documents", "_format_version: \"3.0\"\n---\n_format_version: \"3.0\"\nservices: []\n", FormatUnknown, "more than one document"},
		{"a second empty YAML document", "_format_version: \"3.0\"\n---\n", FormatYAML, "more than one document"},
		{"deep YAML", "_format_version: \"3.0\"\nx: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000), FormatYAML, "nesting is too deep: mappings and sequences may nest at most 10000 levels"},
	}
	for _, c := range cases {
		_, err := Check([]byte(c.in), c.f)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		}
	}
}

// TestFormatVersionQuotesWhatWasWritten: a _format_version that is not a
// string is refused quoting the value as the document writes it (YAML's
// unquoted 3.0 reads as the number 3, and "got 3" misled its author), with
// the fix when quoting it gives a version Kong accepts; JSON alike, also
// through a Scanner fed a byte at a time.
func TestFormatVersionQuotesWhatWasWritten(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"_format_version: 3.0\n", `_format_version must be a string, got 3.0 (a number): quote it, "3.0"`},
		{"_format_version: 2.1\nservices: []\n", `got 2.1 (a number): quote it, "2.1"`},
		{"_format_version: 3.00\n", "must be a string (Kong accepts [1.1 2.1 3.0]), got 3.00 (a number)"},
		{"_format_version: !!float 3.0\n", `got 3.0 (a number): quote it, "3.0"`},
		{"_format_version: yes\n", "must be a string (Kong accepts [1.1 2.1 3.0]), got yes (a boolean)"},
		{"_format_version: ~\n", "must be a string (Kong accepts [1.1 2.1 3.0]), got null"},
		{"_format_version: [3.0]\n", "must be a string (Kong accepts [1.1 2.1 3.0]), got an array"},
		{"_format_version: " + strings.Repeat("1", 100) + "\n", "got " + strings.Repeat("1", 64) + "... (a number)"},
		{`{"_format_version":3.0}`, `_format_version must be a string, got 3.0 (a number): quote it, "3.0"`},
		{`{"_format_version": 1.1 , "services":[]}`, `got 1.1 (a number): quote it, "1.1"`},
		{`{"_format_version":-1.5e+3}`, "must be a string (Kong accepts [1.1 2.1 3.0]), got -1.5e+3 (a number)"},
		{`{"_format_version":false}`, "got false (a boolean)"},
		{`{"_format_version":{"v":"3.0"}}`, "got an object"},
		{`{"_format_version":` + strings.Repeat("1", 100) + `}`, "got " + strings.Repeat("1", 64) + "... (a number)"},
		{`{"_format_version":` + strings.Repeat("1", 64) + `}`, "got " + strings.Repeat("1", 64) + " (a number)"},
	} {
		_, err := Check([]byte(c.in), FormatUnknown)
		if !errors.Is(err, ErrInvalid) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("Check(%.40q): %v, want it to end %q", c.in, err, c.want)
		}
		if Detect([]byte(c.in)) != FormatJSON {
			continue
		}
		s := NewScanner()
		for i := range len(c.in) {
			_, _ = s.Write([]byte{c.in[i]})
		}
		if _, err := s.Close(); err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("Scanner(%.40q) a byte at a time: %v, want it to end %q", c.in, err, c.want)
		}
	}
}

func TestJSONConvertsYAMLOnceAndShares(t *testing.T) {
	c := New("s", 1, "h", FormatYAML, []byte("_format_version: \"3.0\"\n"), nil, nil, zeroTime)
	a, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.JSON()
	if &a[0] != &b[0] {
		t.Fatal("JSON() converted twice: the bytes must be shared by every sink")
	}
	if string(a) != `{"_format_version":"3.0"}` {
		t.Fatalf("JSON form %s", a)
	}
	j := New("s", 1, "h", FormatJSON, []byte(`{"_format_version":"3.0"}`), nil, nil, zeroTime)
	js, _ := j.JSON()
	if &js[0] != &j.Raw[0] {
		t.Fatal("a JSON config's JSON form must be its Raw bytes, not a copy")
	}
}

func FuzzCheck(f *testing.F) {
	for _, p := range fixtures(f)[:5] {
		raw, _ := os.ReadFile(p)
		f.Add(raw)
	}
	f.Add([]byte(`{"_format_version":"3.0"}`))
	f.Add([]byte("_format_version: '1.1'\nservices: []\n"))
	f.Add([]byte(`{"_format_version":"3.0","_format_version":"9.9"}`))
	f.Add([]byte("_format_version: '3.0'\nx:\n  a: 1\n  a: 2\n"))
	f.Add([]byte("_format_version: '3.0'\n---\nservices: []\n"))
	f.Add([]byte("{\"_format_version\":\"3.0\",\"x\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Check(raw, FormatUnknown)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not wrapping ErrInvalid: %v", err)
			}
			return
		}
		// Whatever is accepted has a supported version and a JSON form that
		// is itself accepted; YAML reads as sigs.k8s.io/yaml reads it; JSON
		// is UTF-8 without a key twice (Scan's own fuzz target compares it
		// with a reference).
		if _, err := Check(c.JSON, FormatJSON); err != nil {
			t.Fatalf("accepted config's JSON form rejected: %v", err)
		}
		if c.Format == FormatYAML {
			if want, err := yaml.YAMLToJSON(raw); err != nil || string(want) != string(c.JSON) {
				t.Fatalf("YAML read as %s, sigs.k8s.io/yaml reads %s (%v)", c.JSON, want, err)
			}
		} else if !utf8.Valid(raw) {
			t.Fatalf("accepted JSON that is not UTF-8 or has a key twice: %q", raw)
		}
	})
}

var zeroTime time.Time

func TestParseFormatRoundTrips(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatYAML, FormatUnknown} {
		if got, err := ParseFormat(f.String()); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := ParseFormat("toml"); err == nil || !strings.Contains(err.Error(), "toml") {
		t.Errorf("ParseFormat(toml): %v, want an error naming it", err)
	}
}

func TestYAMLConvertsJSONOnceAndShares(t *testing.T) {
	j := New("s", 1, "h", FormatJSON, []byte(`{"_format_version":"3.0"}`), nil, nil, zeroTime)
	a, err := j.YAML()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := j.YAML()
	if &a[0] != &b[0] || string(a) != "_format_version: \"3.0\"\n" {
		t.Fatalf("YAML() = %q, converted twice or wrong", a)
	}
	y := New("s", 1, "h", FormatYAML, []byte("_format_version: \"3.0\"\n"), nil, nil, zeroTime)
	if ys, _ := y.YAML(); &ys[0] != &y.Raw[0] {
		t.Fatal("a YAML config's YAML form must be its Raw bytes, not a copy")
	}
}

// TestWithGenerationShares: the generation a store assigns keeps the
// bytes and the forms of the committed config (a YAML push's JSON form,
// made by Check, is not made again for the stored generation).
func TestWithGenerationShares(t *testing.T) {
	raw := []byte("_format_version: \"3.0\"\n")
	js := []byte(`{"_format_version":"3.0"}`)
	labels := map[string]string{"k": "v"}
	c := New("s", 0, "h", FormatYAML, raw, js, labels, zeroTime.Add(time.Second))
	g := c.WithGeneration(7)
	if g == c || g.Generation != 7 || c.Generation != 0 {
		t.Fatalf("WithGeneration(7): generation %d (original now %d), same pointer %v", g.Generation, c.Generation, g == c)
	}
	if g.Stream != "s" || g.Hash != "h" || g.Format != FormatYAML || &g.Raw[0] != &raw[0] || g.Labels["k"] != "v" || !g.AcceptTime.Equal(c.AcceptTime) {
		t.Fatalf("WithGeneration changed a field or copied the bytes: %+v", g)
	}
	if got, _ := g.JSON(); &got[0] != &js[0] {
		t.Fatal("WithGeneration lost the JSON form given to New")
	}
	a, _ := c.YAML()
	if b, _ := g.YAML(); &a[0] != &b[0] {
		t.Fatal("the YAML form is not shared with the copy")
	}
	j := New("s", 0, "h", FormatJSON, js, nil, nil, zeroTime)
	y, _ := j.YAML()
	if y2, _ := j.WithGeneration(2).YAML(); &y[0] != &y2[0] {
		t.Fatal("a form made before WithGeneration is made again after it")
	}
}

func TestStreamName(t *testing.T) {
	for in, want := range map[string]string{"": DefaultStream, "default": "default", "kong-eu": "kong-eu"} {
		if got := StreamName(in); got != want {
			t.Errorf("StreamName(%q) = %q, want %q", in, got, want)
		}
	}
}
