package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
)

// bbolt's on-disk meta page: a 16-byte page header, then magic, version,
// page size, flags (4 bytes each), the root bucket (16), the freelist page
// id, the high-water page id, the txid (8 each) and an FNV-64a checksum of
// the 56 bytes before it.
const (
	boltMagic      = 0xED0CDAED
	pageHeaderSize = 16
	metaSumOffset  = 56
)

type diskMeta struct {
	pageSize uint32
	pgid     uint64
	txid     uint64
}

func readDiskMeta(f *os.File, off int64) (diskMeta, bool) {
	var b [metaSumOffset + 8]byte
	if _, err := f.ReadAt(b[:], off+pageHeaderSize); err != nil {
		return diskMeta{}, false
	}
	if binary.LittleEndian.Uint32(b[0:4]) != boltMagic {
		return diskMeta{}, false
	}
	h := fnv.New64a()
	h.Write(b[:metaSumOffset])
	if h.Sum64() != binary.LittleEndian.Uint64(b[metaSumOffset:]) {
		return diskMeta{}, false
	}
	return diskMeta{
		pageSize: binary.LittleEndian.Uint32(b[8:12]),
		pgid:     binary.LittleEndian.Uint64(b[40:48]),
		txid:     binary.LittleEndian.Uint64(b[48:56]),
	}, true
}

// precheckSize refuses a file shorter than its newest valid meta page says
// it is, before bbolt maps it: bbolt would fault reading past the end, and
// a fault recovered inside bbolt.Open leaves its file mapped and locked for
// the rest of the process (a second Open then waits for the lock in vain).
// A file with no valid meta page is left to bbolt to refuse.
func precheckSize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt reports it
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil
	}
	m0, ok0 := readDiskMeta(f, 0)
	pageSize := int64(4096)
	if ok0 && m0.pageSize >= 512 {
		pageSize = int64(m0.pageSize)
	}
	m1, ok1 := readDiskMeta(f, pageSize)
	newest, ok := m0, ok0
	if ok1 && (!ok0 || m1.txid > m0.txid) {
		newest, ok = m1, true
	}
	if !ok || newest.pageSize < 512 {
		return nil
	}
	if need := int64(newest.pgid) * int64(newest.pageSize); need > fi.Size() {
		return corruptErr(path, fmt.Sprintf("truncated: the file has %d bytes, its meta page needs %d", fi.Size(), need))
	}
	return nil
}
