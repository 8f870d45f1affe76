package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/confighub/confighub/test/harness"
)

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
	if _, ok := err.(errors2); ok || syntax != (Scan(b) != nil) {
		t.Fatalf("Scanner(%.200q): %v; Scan: %v", b, err, Scan(b))
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

// A Scanner keeps the keys of the open objects only: written in small
// pieces, a long document with many keys leaves its key memory at the
// size of what is open, and a duplicate of a key read many pieces before
// is still found.
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
	s := NewScanner()
	for off := 0; off < len(doc); off += 7 {
		if _, err := s.Write(doc[off:min(off+7, len(doc))]); err != nil {
			t.Fatal(err)
		}
		if n := len(s.sc.arena); n > 256 {
			t.Fatalf("after byte %d the scanner keeps %d bytes of keys", off, n)
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

// Checking a Kong configuration allocates once (the scan's first memory),
// whatever its size; only deep nesting, many open keys, objects of more
// than bigKeys keys and keys with escapes cost more.
func TestScanAllocatesOnce(t *testing.T) {
	for _, f := range fixtures(t)[:10] {
		js, _ := fixtureJSON(t, f)
		if n := testing.AllocsPerRun(10, func() {
			if err := Scan(js); err != nil {
				t.Fatal(err)
			}
		}); n > 1 {
			t.Errorf("%s: Scan allocates %.0f times", f, n)
		}
		if n := testing.AllocsPerRun(10, func() {
			if _, err := Check(js, FormatJSON); err != nil {
				t.Fatal(err)
			}
		}); n > 1 {
			t.Errorf("%s: Check allocates %.0f times", f, n)
		}
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
