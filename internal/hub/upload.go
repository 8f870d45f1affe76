package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// preallocBytes bounds what an upload header reserves before any bytes.
const preallocBytes = 32 << 20

// Assembler rebuilds an uploaded configuration from chunks. It bounds memory
// by the announced size (itself bounded by the hub's limit) and hashes the
// bytes as they arrive, so Finish costs nothing more than a compare.
type Assembler struct {
	total    int64
	expected string
	buf      []byte
	h        hash.Hash
}

// NewAssembler checks an upload header's size against limit and returns an
// assembler for it.
func NewAssembler(totalSize uint64, expectedHash string, limit int64) (*Assembler, error) {
	if totalSize == 0 {
		return nil, fmt.Errorf("%w: upload header: total_size must be > 0", ErrInvalid)
	}
	if limit > 0 && totalSize > uint64(limit) {
		return nil, fmt.Errorf("%w: upload of %d bytes exceeds the limit of %d bytes (--max-config-bytes)", ErrTooLarge, totalSize, limit)
	}
	if len(expectedHash) != 64 {
		return nil, fmt.Errorf("%w: upload header: expected_hash must be 64 hex characters", ErrInvalid)
	}
	// A header alone must not reserve the whole limit (up to 256 MiB): the
	// buffer starts at the announced size only up to preallocBytes (which
	// covers the configs real gateways take without a copy) and grows
	// with the bytes that really arrive.
	return &Assembler{total: int64(totalSize), expected: expectedHash, buf: make([]byte, 0, min(totalSize, preallocBytes)), h: sha256.New()}, nil
}

// Write appends one chunk; more bytes than announced is an error.
func (a *Assembler) Write(chunk []byte) error {
	if int64(len(a.buf))+int64(len(chunk)) > a.total {
		return fmt.Errorf("%w: upload sent more than the announced total_size of %d bytes", ErrInvalid, a.total)
	}
	a.buf = append(a.buf, chunk...)
	a.h.Write(chunk)
	return nil
}

// Received is the number of bytes so far.
func (a *Assembler) Received() int64 { return int64(len(a.buf)) }

// Finish returns the bytes and their hash once all arrived and the hash
// matches.
func (a *Assembler) Finish() ([]byte, string, error) {
	if int64(len(a.buf)) != a.total {
		return nil, "", fmt.Errorf("%w: upload truncated: got %d of %d bytes", ErrInvalid, len(a.buf), a.total)
	}
	got := hex.EncodeToString(a.h.Sum(nil))
	if got != a.expected {
		return nil, "", fmt.Errorf("%w: upload hash mismatch: expected_hash %s, bytes hash to %s", ErrInvalid, a.expected, got)
	}
	return a.buf, got, nil
}
