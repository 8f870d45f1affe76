package config

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"
)

// sameAsStdlib fails when Valid disagrees with the reference: what
// encoding/json.Valid accepts that is also UTF-8 and has no key twice in an
// object.
func sameAsStdlib(t interface{ Fatalf(string, ...any) }, b []byte) {
	want := json.Valid(b) && utf8.Valid(b) && !refDuplicateKey(b)
	if got := Valid(b); got != want {
		t.Fatalf("Valid(%q) = %v, reference = %v (encoding/json.Valid %v, utf8.Valid %v)", b, got, want, json.Valid(b), utf8.Valid(b))
	}
}

// refDuplicateKey reports whether valid JSON b has an object with a key
// twice, with encoding/json's tokenizer (slow and simple: the reference).
func refDuplicateKey(b []byte) bool {
	type obj struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*obj // nil for an array
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.wantKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &obj{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

func TestValidTable(t *testing.T) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, ` { } `, `{"a":1}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{a:1}`,
		`"x"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"a` + "\x01" + `b"`, "\"a\tb\"",
		`"0123456789abcdef\"01234567"`, `"0123456789abcdef\\"`, `"é ü 漢字"`, "\"\xff\xfe\"", "\"0123456789\xc3\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "[\"0123456789abcdef\xe6\xbc\xa2\"]",
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"a":1},"b":[{"a":1},{"a":1,"b":{"a":[]}}]}`, `{"a":[{"k":1,"k":1}]}`, `{"\ud83d\ude00":1,"😀":2}`, `{"\ud800":1,"\ufffd":2}`,
		// Keys of equal hash (length, first and last eight bytes), and of
		// equal hash bit in an object's bloom filter, told apart by their bytes.
		`{"aaaaaaaaXbbbbbbbb":1,"aaaaaaaaYbbbbbbbb":2}`, `{"aaaaaaaaXbbbbbbbb":1,"aaaaaaaaYbbbbbbbb":2,"aaaaaaaaXbbbbbbbb":3}`,
		`{"abcd":1,"abxcd":2,"abcd":3}`, `{"":1,"":2}`, `{"":1,"a":2}`, `{"a":{"":1},"":{"":2}}`,
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

// fixtureJSON is the fixture at f converted to JSON, compact and indented.
func fixtureJSON(t *testing.T, f string) (js, indented []byte) {
	t.Helper()
	y, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if js, err = yaml.YAMLToJSON(y); err != nil {
		t.Fatal(err)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, js, "", "  "); err != nil {
		t.Fatal(err)
	}
	return js, ind.Bytes()
}

// Every KIC fixture (converted to JSON), and every prefix-truncated and
// byte-flipped variant of a few, is judged like encoding/json judges it.
func TestValidFixtures(t *testing.T) {
	for n, f := range fixtures(t) {
		js, ind := fixtureJSON(t, f)
		if !Valid(js) {
			t.Fatalf("%s: a valid config is rejected", f)
		}
		if !Valid(ind) {
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
		`true`, `fals`, `null`, `é`, "\xff", `ab`, `"a"`, `"\u0061"`, "\xe6\xbc", "\xa2"}
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
	for _, s := range []string{`{"_format_version":"3.0","services":[{"name":"a\"b","port":80}]}`, `[1,-2.5e3,true,null]`, `"\u00e9\\"`, `{"a":{"b":1,"\u0062":2}}`, "{\"a\":\"\xc3\"}", "[" + strings.Repeat(`{"k":[`, 30) + "]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsStdlib(t, b) })
}

// Scan names what is wrong and where: the path of a duplicate key (also
// in objects large enough to use a map, and after unescaping), the value
// holding invalid UTF-8, and the nesting limit.
func TestScanSaysWhatAndWhere(t *testing.T) {
	wide := func(dupAt int) string {
		var b strings.Builder
		b.WriteString(`{"services":[{},{"tags":[],"x":{`)
		for i := range 40 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":%d`, i, i)
		}
		if dupAt >= 0 {
			fmt.Fprintf(&b, `,"k%d":0`, dupAt)
		}
		b.WriteString(`}}]}`)
		return b.String()
	}
	cases := []struct {
		in   string
		kind SyntaxErrorKind
		want string
	}{
		{`{"_format_version":"3.0","_format_version":"9.9"}`, DuplicateKey, `duplicate key _format_version (byte 25)`},
		{`{"consumers":[{"username":"u","keyauth_credentials":[{"key":"A","key":"B"}]}]}`, DuplicateKey, `duplicate key consumers[0].keyauth_credentials[0].key `},
		{`{"a":{"b c":1,"b\u0020c":2}}`, DuplicateKey, `duplicate key a["b c"] `},
		{wide(3), DuplicateKey, `duplicate key services[1].x.k3 `},
		{wide(39), DuplicateKey, `duplicate key services[1].x.k39 `},
		{`{"services":[{"name":"caf` + "\xe9" + `"}]}`, InvalidUTF8, `invalid UTF-8 in a string at byte 25 (in services[0].name)`},
		{strings.Repeat("[", 100000) + strings.Repeat("]", 100000), TooDeep, `the nesting is too deep at byte 10000: objects and arrays may nest at most 10000 levels`},
		{`{"a":1,}`, Malformed, `syntax error near byte 7`},
	}
	for _, c := range cases {
		err := Scan([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Kind != c.kind || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Scan(%.60q) = %v, want kind %d saying %q", c.in, err, c.kind, c.want)
		}
	}
	if err := Scan([]byte(wide(-1))); err != nil {
		t.Errorf("40 distinct keys: %v", err)
	}
	// A path through a hostile document stays short.
	deep := strings.Repeat(`{"`+strings.Repeat("k", 1000)+`":`, 5000) + `{"a":1,"a":2}` + strings.Repeat("}", 5000)
	if err := Scan([]byte(deep)); err == nil || len(err.Error()) > 4096 {
		t.Errorf("deep duplicate: %d bytes of error: %.200v", len(fmt.Sprint(err)), err)
	}
}

// special's lowest mark is the first byte that ends a run of plain string
// bytes, for every byte value at every position of a word, whatever the
// bytes after it (they may borrow).
func TestSpecialMarksFirst(t *testing.T) {
	isSpecial := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf }
	rng := rand.New(rand.NewPCG(1, 2))
	for pos := range 8 {
		for c := range 256 {
			for range 64 {
				var w [8]byte
				for i := range w {
					switch {
					case i < pos:
						w[i] = byte(0x20 + rng.IntN(0x60))
						for isSpecial(w[i]) {
							w[i] = byte(0x20 + rng.IntN(0x60))
						}
					case i == pos:
						w[i] = byte(c)
					default:
						w[i] = byte(rng.Uint32())
					}
				}
				want := 8
				for i, b := range w {
					if isSpecial(b) {
						want = i
						break
					}
				}
				m := special(binary.LittleEndian.Uint64(w[:]))
				if got := bits.TrailingZeros64(m) >> 3; got != want {
					t.Fatalf("special(%q) marks byte %d first, want %d", w, got, want)
				}
			}
		}
	}
}

// The fast path's branchless key hash is keyHash, whatever surrounds the
// key: a key read in place and the same key kept or unescaped compare
// equal.
func TestKeyHashAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n < 40; n++ {
		for range 100 {
			p := make([]byte, 7+1+n+1+7)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			if got, want := keyHashAt(p, 7, 7+n+2), keyHash(bytes.Clone(p[8:8+n])); got != want {
				t.Fatalf("keyHashAt(%q) = %x, keyHash: %x", p[8:8+n], got, want)
			}
		}
	}
}
