package main

import (
	"bytes"
	"fmt"

	"github.com/confighub/confighub/test/harness"
)

// genConfig returns a Kong declarative configuration (JSON, KIC's shape)
// of about size bytes (harness.KongJSON). The stamp (9 digits in the
// first service's tags) makes each variant hash differently; stamp it
// with stamped on a copy.
func genConfig(size int) []byte { return harness.KongJSON(size) }

var stampMarker = []byte(`"bench-stamp:`)

// stamped returns a copy of base with stamp n.
func stamped(base []byte, n int) []byte {
	out := bytes.Clone(base)
	i := bytes.Index(out, stampMarker)
	if i < 0 {
		panic("genConfig: no stamp marker")
	}
	copy(out[i+len(stampMarker):], fmt.Sprintf("%09d", n%1_000_000_000))
	return out
}
