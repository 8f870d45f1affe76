package bolt

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestMarshalMetaIsJSONMarshal: marshalMeta writes what json.Marshal
// writes, for metas with and without every optional field, strings of
// every class JSON escapes (quotes, control, HTML, U+2028, invalid
// UTF-8), labels in any order, times in any zone, and refuses what it
// refuses.
func TestMarshalMetaIsJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "prod-1", `"`, `\`, "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "<", ">", "&", "\u2028", "\u2029", "é", "日本", "\xff", "\xe2\x80", "🙂", " ", "\x7f"}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+30*60), time.FixedZone("y", -7*3600), time.FixedZone("s", 3600+17), time.FixedZone("bad", 25*3600)}
	for i := range 20000 {
		m := streamMeta{Stream: str(), Generation: rng.Uint64() >> rng.IntN(64), Hash: str(), Format: str(), Size: rng.IntN(1 << 30), Blob: str()}
		if n := rng.IntN(4); n > 0 {
			m.Labels = map[string]string{}
			for range n {
				m.Labels[str()] = str()
			}
		} else if rng.IntN(2) == 0 {
			m.Labels = map[string]string{}
		}
		switch rng.IntN(4) {
		case 0: // zero time
		case 1:
			m.AcceptTime = time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		case 2:
			m.AcceptTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(1 << 50)))
		case 3:
			m.AcceptTime = time.Date(rng.IntN(12000)-1000, 1, 2, 3, 4, 5, rng.IntN(1000)*1000, zones[rng.IntN(len(zones))])
		}
		got, gerr := marshalMeta(m)
		want, werr := json.Marshal(m)
		if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) && werr == nil {
			t.Fatalf("meta %d %+v:\n%s (%v)\nwant (json.Marshal)\n%s (%v)", i, m, got, gerr, want, werr)
		}
	}
}

// FuzzMarshalMeta: marshalMeta is json.Marshal for any strings.
func FuzzMarshalMeta(f *testing.F) {
	f.Add("default", "ab12", "json", "k", "v", "x.rec", int64(1700000000), uint64(7))
	f.Add("a\"b\\c\n<>&\u2028\xff", "", "", "", "", "", int64(0), uint64(0))
	f.Fuzz(func(t *testing.T, stream, hash, format, k, v, blob string, sec int64, gen uint64) {
		m := streamMeta{Stream: stream, Generation: gen, Hash: hash, Format: format, Blob: blob, Labels: map[string]string{k: v}, AcceptTime: time.Unix(sec, 0).UTC()}
		got, gerr := marshalMeta(m)
		want, werr := json.Marshal(m)
		if (gerr != nil) != (werr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("%s (%v), want %s (%v)", got, gerr, want, werr)
		}
	})
}
