package config

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"math/rand/v2"
	"testing"
)

// callSizes records the size of each Write into the hash it wraps.
type callSizes struct {
	hash.Hash
	sizes []int
}

func (c *callSizes) Write(b []byte) (int, error) {
	c.sizes = append(c.sizes, len(b))
	return c.Hash.Write(b)
}

// TestHasherPieces: whatever the writes, no call into SHA-256 takes more
// than hashPiece bytes, and the sum is SHA-256 of all of them (Hash's
// too).
func TestHasherPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, hashPiece - 1, hashPiece, hashPiece + 1, 3*hashPiece + 7, 1<<20 + 13} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		sum := sha256.Sum256(b)
		want := hex.EncodeToString(sum[:])
		rec := &callSizes{Hash: sha256.New()}
		h := &Hasher{h: rec}
		cut := n / 3
		_, _ = h.Write(b[:cut])
		_, _ = h.Write(b[cut:])
		for _, s := range rec.sizes {
			if s > hashPiece {
				t.Fatalf("%d bytes: a call of %d bytes into SHA-256 (at most %d)", n, s, hashPiece)
			}
		}
		if got := h.Sum(); got != want {
			t.Fatalf("%d bytes: Hasher sum %s, want %s", n, got, want)
		}
		if got := Hash(b); got != want {
			t.Fatalf("%d bytes: Hash %s, want %s", n, got, want)
		}
	}
}
