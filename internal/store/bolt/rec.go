package bolt

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// A record file, <random id>.rec in <path>.blobs/, holds one generation of
// one stream, and is by itself the durable truth about it:
//
//	[0, 24)            header: magic "chubrec1", metaOff (u64 LE),
//	                   metaLen (u32 LE), CRC-32C of header[0:20] + meta
//	[24, 4096)         unused
//	[4096, 4096+size)  the config bytes (written by the stage)
//	[metaOff, +metaLen) the meta record, JSON (stream, generation, hash,
//	                   format, size, labels, accept time); metaOff is
//	                   4096+size
//	beyond             whatever a recycled file held before (ignored)
//
// The stage writes only the config bytes; the commit writes the meta and
// the header, then fdatasyncs once. A StageConfig stage below deferMax is
// written whole, in one system call, after the commit (writeRecord). The header
// is at a fixed offset the config bytes never reach, so a client cannot
// forge one with its payload.
// A record is valid when its header's CRC matches and its config bytes
// hash to the meta's SHA-256; anything else (a torn write: never acked) is
// not a record.
//
// Layout 2 files, <random id>.cfg, hold a config's bytes only (the meta in
// bbolt names them); Open moves them to record files.
const (
	recExt      = ".rec"
	blobExt     = ".cfg" // layout 2
	blobIDBytes = 16
	recMagic    = "chubrec1"
	recHdrLen   = 24
	// recDataOff is where the config bytes start: a page of its own for
	// the header.
	recDataOff = 4096
	// recMaxMeta bounds a meta record read from disk (labels are at most
	// 64 pairs, each bounded by the message size).
	recMaxMeta = 64 << 20
	// writeChunk is the unit of a stage: written, handed to the disk
	// (startWriteback), then hashed while still in the CPU cache; it also
	// bounds how long a canceled stage keeps writing.
	writeChunk = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recPad is the zeros written between a whole record's header and its
// config bytes (writeRecord); never written to.
var recPad [recDataOff]byte

func blobDirFor(path string) string { return path + ".blobs" }

func newRecName() (string, error) {
	var b [blobIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("record file name: %w", err)
	}
	return hex.EncodeToString(b[:]) + recExt, nil
}

// isOurs says whether name is a record file or a layout 2 blob; other
// files in the directory are never touched.
func isOurs(name string) bool { return isNamed(name, recExt) || isNamed(name, blobExt) }

func isNamed(name, ext string) bool {
	id, ok := strings.CutSuffix(name, ext)
	if !ok || len(id) != 2*blobIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ { // hex, as newRecName writes it, without decoding
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// syncDir makes the directory's entries (a created or removed file) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return d.Close()
}

// encodeRec returns the header and the meta bytes of a record of m.
func encodeRec(m streamMeta) (hdr, meta []byte, err error) {
	meta, err = marshalMeta(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encode meta: %w", err)
	}
	hdr = make([]byte, recHdrLen)
	copy(hdr, recMagic)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(recDataOff+m.Size))
	binary.LittleEndian.PutUint32(hdr[16:], uint32(len(meta)))
	crc := crc32.Update(crc32.Checksum(hdr[:20], castagnoli), castagnoli, meta)
	binary.LittleEndian.PutUint32(hdr[20:], crc)
	return hdr, meta, nil
}

// sealRec writes m's meta and header into f (whose config bytes are in
// place) and fdatasyncs it (a record restored or moved at Open).
func sealRec(f *os.File, m streamMeta) error {
	if _, err := writeRec(f, m); err != nil {
		return err
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// writeRec writes m's meta and header into f, without a flush (a commit's
// flush is the flusher's), and returns the meta as written (the commit
// log's entry repeats it).
func writeRec(f *os.File, m streamMeta) ([]byte, error) {
	hdr, meta, err := encodeRec(m)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(meta, int64(recDataOff+m.Size)); err != nil {
		return nil, fmt.Errorf("write meta to %s: %w", f.Name(), err)
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("write header to %s: %w", f.Name(), err)
	}
	return meta, nil
}

// errNotRec is a file that holds no valid record header (a pool file, or
// a write torn by a crash).
var errNotRec = errors.New("no valid record header")

// readRecMeta reads and checks f's header and meta record (not the config
// bytes).
func readRecMeta(f *os.File) (streamMeta, error) {
	var m streamMeta
	hdr := make([]byte, recHdrLen)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return m, errNotRec
		}
		return m, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if string(hdr[:8]) != recMagic {
		return m, errNotRec
	}
	off := binary.LittleEndian.Uint64(hdr[8:])
	n := binary.LittleEndian.Uint32(hdr[16:])
	if off < recDataOff || n > recMaxMeta {
		return m, errNotRec
	}
	meta := make([]byte, n)
	if _, err := f.ReadAt(meta, int64(off)); err != nil {
		if errors.Is(err, io.EOF) {
			return m, errNotRec
		}
		return m, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if crc32.Update(crc32.Checksum(hdr[:20], castagnoli), castagnoli, meta) != binary.LittleEndian.Uint32(hdr[20:]) {
		return m, errNotRec
	}
	if err := json.Unmarshal(meta, &m); err != nil || uint64(recDataOff+m.Size) != off || m.Size < 0 {
		return m, errNotRec
	}
	return m, nil
}

// readRecData reads f's config bytes and checks them against m's SHA-256.
func readRecData(f *os.File, m streamMeta) ([]byte, error) {
	raw := make([]byte, m.Size)
	if _, err := f.ReadAt(raw, recDataOff); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errNotRec
		}
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if config.Hash(raw) != m.Hash {
		return nil, errNotRec
	}
	return raw, nil
}

// readRec reads a whole record: its meta and its checked config bytes.
func readRec(f *os.File) (streamMeta, []byte, error) {
	m, err := readRecMeta(f)
	if err != nil {
		return m, nil, err
	}
	raw, err := readRecData(f, m)
	return m, raw, err
}

// readBlob reads the config file an index meta record names, and checks it
// against that meta: a record file must hold a valid record of the same
// stream, generation and hash; a layout 2 blob must be of the meta's size
// and hash to its SHA-256. Anything else is corrupt, named.
func readBlob(f *os.File, m streamMeta, stream string) ([]byte, error) {
	if isNamed(m.Blob, recExt) {
		got, raw, err := readRec(f)
		switch {
		case errors.Is(err, errNotRec):
			return nil, fmt.Errorf("%w: stream %q generation %d: %s is not a valid record (torn or changed)", store.ErrCorrupt, stream, m.Generation, f.Name())
		case err != nil:
			return nil, fmt.Errorf("stream %q: %w", stream, err)
		case got.Stream != stream || got.Generation != m.Generation || got.Hash != m.Hash:
			return nil, fmt.Errorf("%w: stream %q generation %d: %s holds stream %q generation %d", store.ErrCorrupt, stream, m.Generation, f.Name(), got.Stream, got.Generation)
		}
		return raw, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stream %q: stat %s: %w", stream, f.Name(), err)
	}
	if fi.Size() != int64(m.Size) {
		return nil, fmt.Errorf("%w: stream %q generation %d: %s is %d bytes, meta says %d", store.ErrCorrupt, stream, m.Generation, f.Name(), fi.Size(), m.Size)
	}
	raw := make([]byte, m.Size)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, fmt.Errorf("stream %q: read %s: %w", stream, f.Name(), err)
	}
	if got := config.Hash(raw); got != m.Hash {
		return nil, fmt.Errorf("%w: stream %q generation %d: %s hashes to %s, meta says %s", store.ErrCorrupt, stream, m.Generation, f.Name(), got, m.Hash)
	}
	return raw, nil
}

// openBlob opens the file a meta record names; a missing one is corrupt.
func openBlob(dir string, m streamMeta, stream string) (*os.File, error) {
	p := filepath.Join(dir, m.Blob)
	if !isOurs(m.Blob) {
		return nil, fmt.Errorf("%w: stream %q generation %d: meta names file %q, not a config file name", store.ErrCorrupt, stream, m.Generation, m.Blob)
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: stream %q generation %d: its config file %s is missing", store.ErrCorrupt, stream, m.Generation, p)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: open %s: %w", stream, p, err)
	}
	return f, nil
}

// removeOrphans removes every file of ours in dir that keep does not name.
func removeOrphans(dir string, keep map[string]bool) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || !isOurs(e.Name()) || keep[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("remove unreferenced %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}
