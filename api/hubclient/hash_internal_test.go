package hubclient

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// callSizes records the size of each Write.
type callSizes struct{ sizes []int }

func (c *callSizes) Write(b []byte) (int, error) {
	c.sizes = append(c.sizes, len(b))
	return len(b), nil
}

// TestHashPieces: expected_hash is SHA-256 of the bytes, fed at most
// hashPiece bytes per call, so the caller's garbage collector never waits
// for one long call.
func TestHashPieces(t *testing.T) {
	for _, n := range []int{0, 1, hashPiece, hashPiece + 1, 5*hashPiece + 3} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 7)
		}
		var rec callSizes
		writePieces(&rec, b)
		total := 0
		for _, s := range rec.sizes {
			if s > hashPiece {
				t.Fatalf("%d bytes: a write of %d bytes (at most %d)", n, s, hashPiece)
			}
			total += s
		}
		if total != n {
			t.Fatalf("%d bytes: wrote %d", n, total)
		}
		sum := sha256.Sum256(b)
		if got, want := hashHex(b), hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("%d bytes: hash %s, want %s", n, got, want)
		}
	}
}
