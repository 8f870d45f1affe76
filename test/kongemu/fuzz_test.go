package kongemu

import (
	"os"
	"testing"
)

// FuzzCheck: any body gets an answer (never a panic); an accepted body has
// a 32-hex hash equal to ConfigHash, a rejected one Kong's error body.
func FuzzCheck(f *testing.F) {
	for _, p := range fixtureFiles(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"_format_version":"3.0","routes":[{"service":{"id":1}}]}`))
	f.Add([]byte(`{"config":"_format_version: \"3.0\""}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := parseAndCheck(body, checkOptions{})
		if r.Invalid != nil {
			if r.Invalid.Code != codeInvalidDeclarative || r.Invalid.Name != "invalid declarative configuration" || r.Hash != "" {
				t.Fatalf("bad rejection %+v", r)
			}
			return
		}
		if len(r.Hash) != 32 || r.Hash != ConfigHash(body) {
			t.Fatalf("hash %q, ConfigHash %q", r.Hash, ConfigHash(body))
		}
	})
}
