package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/test/harness"
)

// valid reports whether scan accepts b.
func valid(b []byte) bool { _, err := scan(b); return err == nil }

// sameAsStdlib fails when scan disagrees with the reference: what
// encoding/json.Valid accepts that is also UTF-8 (no lone surrogate escape
// either) and has no key twice in an object.
func sameAsStdlib(t interface{ Fatalf(string, ...any) }, b []byte) {
	want := json.Valid(b) && utf8.Valid(b) && !refLoneSurrogate(b) && !refDuplicateKey(b)
	if got := valid(b); got != want {
		t.Fatalf("scan(%q) accepts: %v, reference = %v (encoding/json.Valid %v, utf8.Valid %v)", b, got, want, json.Valid(b), utf8.Valid(b))
	}
}

// refLoneSurrogate reports whether valid JSON b escapes half a surrogate
// pair (\ud800 alone), which is not UTF-8 either.
func refLoneSurrogate(b []byte) bool {
	hex := func(i int) rune {
		r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		if err != nil {
			return 0
		}
		return rune(r)
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++
			continue
		}
		r := hex(i)
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' || hex(i+6) < 0xdc00 || hex(i+6) >= 0xe000 {
				return true
			}
			i += 11
		case r >= 0xdc00 && r < 0xe000:
			return true
		default:
			i += 5
		}
	}
	return false
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
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"a":1},"b":[{"a":1},{"a":1,"b":{"a":[]}}]}`, `{"a":[{"k":1,"k":1}]}`, `{"\ud83d\ude00":1,"😀":2}`, `{"\ud800":1,"\ufffd":2}`, `"\ud800"`, `"\udc00\ud800"`, `"\ud800\u0041"`, `"\ud83d\ude00"`,
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
		if !valid(js) {
			t.Fatalf("%s: a valid config is rejected", f)
		}
		if !valid(ind) {
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
	for _, s := range []string{`{"_format_version":"3.0","services":[{"name":"a\"b","port":80}]}`, `[1,-2.5e3,true,null]`, `"\u00e9\\"`, `"\ud800"`, `{"a":{"b":1,"\u0062":2}}`, "{\"a\":\"\xc3\"}", "[" + strings.Repeat(`{"k":[`, 30) + "]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsStdlib(t, b) })
}

// scan names what is wrong and where: the path of a duplicate key (also
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
	cases := []struct{ in, want string }{
		{`{"_format_version":"3.0","_format_version":"9.9"}`, `duplicate key _format_version (byte 25)`},
		{`{"consumers":[{"username":"u","keyauth_credentials":[{"key":"A","key":"B"}]}]}`, `duplicate key consumers[0].keyauth_credentials[0].key `},
		{`{"a":{"b c":1,"b\u0020c":2}}`, `duplicate key a["b c"] `},
		{wide(3), `duplicate key services[1].x.k3 `},
		{wide(39), `duplicate key services[1].x.k39 `},
		{`{"services":[{"name":"caf` + "\xe9" + `"}]}`, `invalid UTF-8 in a string at byte 25 (in services[0].name)`},
		{strings.Repeat("[", 100000) + strings.Repeat("]", 100000), `the nesting is too deep at byte 10000: objects and arrays may nest at most 10000 levels`},
		{`{"a":1,}`, `syntax error near byte 6`},
		{`[1] [2]`, `syntax error near byte 4: data after the top-level value`},
	}
	for _, c := range cases {
		if _, err := scan([]byte(c.in)); !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("scan(%.60q) = %v, want it to say %q", c.in, err, c.want)
		}
	}
	if _, err := scan([]byte(wide(-1))); err != nil {
		t.Errorf("40 distinct keys: %v", err)
	}
	// A path through a hostile document stays short.
	deep := strings.Repeat(`{"`+strings.Repeat("k", 1000)+`":`, 5000) + `{"a":1,"a":2}` + strings.Repeat("}", 5000)
	if _, err := scan([]byte(deep)); err == nil || len(err.Error()) > 4096 {
		t.Errorf("deep duplicate: %d bytes of error: %.200v", len(fmt.Sprint(err)), err)
	}
}

// scanPieces runs a Scanner over b cut at random places.
func scanPieces(b []byte, rng *rand.Rand) (string, error) {
	s := NewScanner()
	for len(b) > 0 {
		n := 1 + rng.IntN(min(len(b), 1+rng.IntN(40)))
		if _, err := s.Write(b[:n]); err != nil {
			// later writes fail too, and so does Close
			if _, err2 := s.Write([]byte("{")); err2 == nil {
				return "", errors2("write after a failed one succeeded")
			}
			_, cerr := s.Close()
			if cerr == nil {
				return "", errors2("Close after a failed write succeeded")
			}
			return "", err
		}
		b = b[n:]
	}
	return s.Close()
}

type errors2 string

func (e errors2) Error() string { return string(e) }

// sameAsCheck fails when the Scanner, fed b in random pieces, judges b
// other than Check(b, FormatJSON) does: the same verdict, the same
// _format_version, "not valid JSON" exactly when Scan refuses b.
func sameAsCheck(t interface{ Fatalf(string, ...any) }, b []byte, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	fv, err := scanPieces(b, rng)
	want, werr := Check(b, FormatJSON)
	if (err == nil) != (werr == nil) || fv != want.FormatVersion {
		t.Fatalf("Scanner(%.200q) = %q, %v; Check: %q, %v", b, fv, err, want.FormatVersion, werr)
	}
	syntax := err != nil && (strings.Contains(err.Error(), "not valid JSON") || strings.Contains(err.Error(), "empty"))
	if _, ok := err.(errors2); ok || syntax == valid(b) {
		t.Fatalf("Scanner(%.200q): %v; scan accepts: %v", b, err, valid(b))
	}
}

func TestScannerTable(t *testing.T) {
	for i, s := range []string{
		``, ` `, `{}`, `[]`, `{"_format_version":"3.0"}`, ` {"_format_version" : "3.0" } `, `{"_format_version":"3.0"}x`,
		`{"_format_version":3}`, `{"_format_version":3.0}`, `{"_format_version":-1.5e+3,"a":1}`, `{"_format_version":true}`, `{"_format_version":"9.9"}`, `{"_format_version":null}`, `{"_format_version":{"a":1}}`,
		`{"a":{"_format_version":"3.0"}}`, `{"a":{"_format_version":"3.0"},"_format_version":"1.1"}`,
		`{"_format_version":"3.0","_format_version":"bad"}`, `{"_format_version":"bad","_format_version":"3.0"}`,
		`{"\u005fformat_version":"3.0"}`, `{"_format_version":"3\u002e0"}`, `{"_format_version":"3.0","services":[{"port":-1.5e+3,"x":[true,false,null]}]}`,
		`{"_format_version":"3.0",}`, `{"_format_version":"3.0"`, `{"_format_version":"3.0"]`, `["_format_version","3.0"]`, `"3.0"`, `3`, `null`,
		`{"_format_version":"3.0","n":01}`, `{"_format_version":"3.0","n":1.}`, `{"_format_version":"3.0","n":-}`, `{"_format_version":"3.0","n":1e}`,
		`{"_format_version":"3.0","s":"\x"}`, `{"_format_version":"3.0","s":"\u12g4"}`, "{\"_format_version\":\"3.0\",\"s\":\"a\x01\"}",
		`{"_format_version":"3.0","n":0}`, `{"_format_version":"3.0","n":10}`, `{"_format_version":"3.0","t":tru}`,
		`{"_format_version":"` + strings.Repeat("3", 100) + `"}`, `{"` + strings.Repeat("k", 200) + `":1,"_format_version":"3.0"}`,
		`{"_format_version":"3.0","d":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"_format_version":"3.0","d":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"_format_version":"3.0","a":1,"a":2}`, `{"_format_version":"3.0","s":[{"a":1,"b":{"a":1},"a":3}]}`, `{"_format_version":"3.0","\u0061":1,"a":2}`,
		`{"_format_version":"3.0","k":"` + "\xff" + `"}`, `{"_format_version":"3.0","k":"é漢😀"}`, "{\"_format_version\":\"3.0\",\"k\":\"\xed\xa0\x80\"}",
		"{\"_format_version\":\"3.0\",\"\xc3\":1}", "{\"_format_version\":\"3.0\",\"k\":\"\xe6\xbc\"}",
		`{"_format_version":"3.0","o":{` + manyKeys(40, false) + `}}`, `{"_format_version":"3.0","o":{` + manyKeys(40, true) + `}}`,
		`{"_format_version":"3.0","o":{` + manyKeys(33, true) + `}}`, `{"_format_version":"3.0","o":{` + manyKeys(32, true) + `}}`,
		`{"_format_version":"3.0","aaaaaaaaXbbbbbbbb":1,"aaaaaaaaYbbbbbbbb":2,"aaaaaaaaXbbbbbbbb":3}`,
	} {
		for seed := range uint64(8) {
			sameAsCheck(t, []byte(s), seed+uint64(i)*100)
		}
	}
}

// Every KIC fixture as JSON, indented, and cut or changed at many places,
// in random pieces, is judged as Check judges it.
func TestScannerFixtures(t *testing.T) {
	for n, f := range fixtures(t) {
		js, ind := fixtureJSON(t, f)
		sameAsCheck(t, js, uint64(n))
		sameAsCheck(t, ind, uint64(n))
		if n%10 != 0 {
			continue
		}
		for i := 0; i < len(js); i += 1 + len(js)/100 {
			sameAsCheck(t, js[:i], uint64(i))
			c := bytes.Clone(js)
			for _, v := range []byte{'"', '\\', '{', '}', ',', ':', 0x01, 'x', '1'} {
				c[i] = v
				sameAsCheck(t, c, uint64(i))
			}
		}
	}
}

func TestScannerMatchesCheck(t *testing.T) {
	tokens := []string{`{`, `}`, `[`, `]`, `,`, `:`, ` `, "\n", `"`, `\`, `\"`, `\u00e9`, `\u12`, `\n`, `\x`,
		"\x01", `"key"`, `"_format_version"`, `"3.0"`, `"a long string value of more than eight bytes"`, `-`, `0`, `12`, `.`, `5`, `e`, `E+`, `-3.25e-7`,
		`true`, `fals`, `null`, `é`, "\xff", `ab`}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(tokens), 0, 40).Draw(t, "tokens")
		sameAsCheck(t, []byte(strings.Join(parts, "")), rapid.Uint64().Draw(t, "seed"))
	})
	rapid.Check(t, func(t *rapid.T) {
		m := map[string]any{"_format_version": rapid.SampledFrom([]any{"3.0", "1.1", "2.1", "x", 3.0, nil}).Draw(t, "fv")}
		for range rapid.IntRange(0, 4).Draw(t, "n") {
			m[rapid.String().Draw(t, "k")] = jsonValue(t, 0)
		}
		b, _ := json.Marshal(m)
		seed := rapid.Uint64().Draw(t, "seed")
		sameAsCheck(t, b, seed)
		i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
		c := bytes.Clone(b)
		c[i] = rapid.SampledFrom([]byte{'"', '\\', '{', '}', '[', ']', ',', ':', 0x1f, ' ', 'e', '-', '.'}).Draw(t, "byte")
		sameAsCheck(t, c, seed)
		sameAsCheck(t, b[:i], seed)
	})
}

func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"_format_version":"3.0","services":[{"name":"a\"b","port":80}]}`, `[1,-2.5e3,true,null]`, `{"_format_version":"1.1"}`} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) { sameAsCheck(t, b, seed) })
}

// manyKeys is n distinct keys (past the linear compare), the last one
// repeated when dup.
func manyKeys(n int, dup bool) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	if dup {
		fmt.Fprintf(&b, `,"k%d":0`, n-1)
	}
	return b.String()
}

// A Scanner holds the open objects' keys and a few KiB, not the document:
// halfway through a long document with many keys fed in small pieces, it
// holds less than a tenth of it; and a duplicate of a key read many pieces before is
// still found.
func TestScannerKeepsOnlyOpenKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"svc-%d","host":"h","tags":["a","b"],"routes":[{"name":"r-%d","paths":["/"]}]}`, i, i)
	}
	b.WriteString(`]}`)
	doc := []byte(b.String())
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	s := NewScanner()
	for off := 0; off < len(doc); off += 7 {
		if _, err := s.Write(doc[off:min(off+7, len(doc))]); err != nil {
			t.Fatal(err)
		}
		if off == len(doc)/2/7*7 {
			if n := heap() - before; n > int64(len(doc)/10) {
				t.Fatalf("halfway through %d bytes a Scanner holds %d", len(doc), n)
			}
		}
	}
	if _, err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dup := []byte(`{"_format_version":"3.0","services":[],"x":{"a":1,"b":[` + strings.Repeat(`{"k":1},`, 500) + `{}],"a":2}}`)
	s = NewScanner()
	var err error
	for off := 0; off < len(dup) && err == nil; off += 5 {
		_, err = s.Write(dup[off:min(off+5, len(dup))])
	}
	if err == nil || !strings.Contains(err.Error(), "duplicate key x.a ") {
		t.Fatalf("duplicate across pieces: %v", err)
	}
}

// A Scanner fed a document in two pieces, cut at every offset, says
// exactly what Check says of the whole (verdict, _format_version, error
// text with its offset and path): every KIC fixture as compact JSON (and
// some indented), the bench's generated configuration, and variants with
// a duplicate key, invalid UTF-8, escapes and non-ASCII text near their
// end.
func TestScannerEverySplit(t *testing.T) {
	var docs [][]byte
	for n, f := range fixtures(t) {
		js, ind := fixtureJSON(t, f)
		docs = append(docs, js)
		if n%8 == 0 {
			docs = append(docs, ind)
		}
	}
	gen := harness.KongJSON(6 << 10)
	docs = append(docs, gen)
	tail := func(s string) []byte { // gen with s before its last two bytes
		return append(append(bytes.Clone(gen[:len(gen)-2]), s...), gen[len(gen)-2:]...)
	}
	last := fmt.Sprintf("services[%d]", bytes.Count(gen, []byte(`"routes"`))) // the added service
	variants := []struct{ add, says string }{
		{`,{"name":"a","tags":["x"],"name":"b"}`, "duplicate key " + last + ".name "},
		{`,{"name":"a","t\u0061gs":["x"],"tags":1}`, "duplicate key " + last + ".tags "},
		{`,{"name":"caf` + "\xe9" + `"}`, "invalid UTF-8 in a string"},
		{`,{"name":"ünïcödé 漢字 😀","k\"ey":"v\\a\/l\n","e":-1.5e+3,"z":0}`, ""},
		{`,{"name":"a","n":01}`, "syntax error"},
		{`,{"name":"\ud800"}`, "syntax error"},
	}
	for _, v := range variants {
		d := tail(v.add)
		if _, err := Check(d, FormatJSON); v.says == "" && err != nil || v.says != "" && !strings.Contains(fmt.Sprint(err), v.says) {
			t.Fatalf("Check(…%s…) = %v, want %q", v.add, err, v.says)
		}
		docs = append(docs, d)
	}
	for _, d := range docs {
		want, werr := Check(d, FormatJSON)
		for cut := 0; cut <= len(d); cut++ {
			s := NewScanner()
			_, err := s.Write(d[:cut])
			if err == nil {
				_, err = s.Write(d[cut:])
			}
			fv, cerr := s.Close()
			if err == nil {
				err = cerr
			}
			if fmt.Sprint(err) != fmt.Sprint(werr) || fv != want.FormatVersion {
				t.Fatalf("%.80q cut at %d: %q, %v; Check: %q, %v", d, cut, fv, err, want.FormatVersion, werr)
			}
		}
	}
}
