package config

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"
)

// sameAsStdlib fails when Valid and encoding/json.Valid disagree on b.
func sameAsStdlib(t interface{ Fatalf(string, ...any) }, b []byte) {
	if got, want := Valid(b), json.Valid(b); got != want {
		t.Fatalf("Valid(%q) = %v, encoding/json.Valid = %v", b, got, want)
	}
}

func TestValidTable(t *testing.T) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, ` { } `, `{"a":1}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`,
		`"x"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"a` + "\x01" + `b"`, "\"a\tb\"",
		`"0123456789abcdef\"01234567"`, `"0123456789abcdef\\"`, `"é ü 漢字"`, "\"\xff\xfe\"",
		`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e`, `1e+`, `-1.5e-10`, `2.`, `00`,
		`true`, `tru`, `truex`, `false`, `null`, `nul`, `[true,false,null]`, `{"a":[{"b":{}}]}`, `{"a":[}`,
		`[1] [2]`, `{"a":1}}`, `{"a":1]`, `[1}`, "\t\r\n[\n]\n", `[1 2]`, `{"a" "b"}`, `{"a":1 "b":2}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		strings.Repeat(`{"a":`, 9999) + "{}" + strings.Repeat("}", 9999),
		strings.Repeat(`{"a":`, 10000) + "{}" + strings.Repeat("}", 10000),
	} {
		sameAsStdlib(t, []byte(s))
	}
}

// Every KIC fixture (converted to JSON), and every prefix-truncated and
// byte-flipped variant of a few, is judged like encoding/json judges it.
func TestValidFixtures(t *testing.T) {
	for n, f := range fixtures(t) {
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		if !Valid(js) {
			t.Fatalf("%s: a valid config is rejected", f)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, js, "", "  "); err != nil {
			t.Fatal(err)
		}
		if !Valid(ind.Bytes()) {
			t.Fatalf("%s (indented): a valid config is rejected", f)
		}
		if n%10 != 0 {
			continue
		}
		for i := 0; i < len(js); i += 1 + len(js)/200 {
			sameAsStdlib(t, js[:i])
			c := bytes.Clone(js)
			for _, v := range []byte{'"', '\\', '{', '}', ',', ':', 0x01, 'x', '1'} {
				c[i] = v
				sameAsStdlib(t, c)
			}
		}
	}
}

// Random documents built from JSON's tokens, valid or not.
func TestValidMatchesStdlib(t *testing.T) {
	tokens := []string{`{`, `}`, `[`, `]`, `,`, `:`, ` `, "\n", `"`, `\`, `\"`, `\u00e9`, `\u12`, `\n`, `\x`,
		"\x01", `"key"`, `"a long string value of more than eight bytes"`, `-`, `0`, `12`, `.`, `5`, `e`, `E+`, `-3.25e-7`,
		`true`, `fals`, `null`, `é`, "\xff", `ab`}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(tokens), 0, 40).Draw(t, "tokens")
		sameAsStdlib(t, []byte(strings.Join(parts, "")))
	})
	// Structured values, so that valid documents are common too.
	rapid.Check(t, func(t *rapid.T) {
		b, _ := json.Marshal(jsonValue(t, 0))
		sameAsStdlib(t, b)
		if len(b) > 0 {
			i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
			c := bytes.Clone(b)
			c[i] = rapid.SampledFrom([]byte{'"', '\\', '{', '}', '[', ']', ',', ':', 0x1f, ' ', 'e', '-', '.'}).Draw(t, "byte")
			sameAsStdlib(t, c)
			sameAsStdlib(t, b[:i])
		}
	})
}

func jsonValue(t *rapid.T, depth int) any {
	kind := rapid.IntRange(0, 6).Draw(t, "kind")
	if depth > 4 {
		kind %= 4
	}
	switch kind {
	case 0:
		return rapid.String().Draw(t, "s")
	case 1:
		return rapid.Float64().Draw(t, "f")
	case 2:
		return rapid.Bool().Draw(t, "b")
	case 3:
		return nil
	case 4, 5:
		m := map[string]any{}
		for range rapid.IntRange(0, 4).Draw(t, "n") {
			m[rapid.String().Draw(t, "k")] = jsonValue(t, depth+1)
		}
		return m
	default:
		var l []any
		for range rapid.IntRange(0, 4).Draw(t, "n") {
			l = append(l, jsonValue(t, depth+1))
		}
		return l
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"_format_version":"3.0","services":[{"name":"a\"b","port":80}]}`, `[1,-2.5e3,true,null]`, `"\u00e9\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsStdlib(t, b) })
}
