package bolt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/confighub/confighub/store"
)

// Configuration bytes live in blob files beside the bbolt file, one per
// staged or committed generation, named by a random id: <id>.cfg in
// <path>.blobs/. A blob is part of a stream only once a committed meta
// record names it; every other blob in the directory is a leftover of a
// crash (staged, never committed; or the previous generation, committed
// over but not yet removed) and is removed at the next open.
const (
	blobExt     = ".cfg"
	blobIDBytes = 16
	// writeChunk is the unit of a stage: written, handed to the disk
	// (startWriteback), then hashed while still in the CPU cache; it also
	// bounds how long a canceled stage keeps writing.
	writeChunk = 1 << 20
)

func blobDirFor(path string) string { return path + ".blobs" }

func newBlobName() (string, error) {
	var b [blobIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("blob name: %w", err)
	}
	return hex.EncodeToString(b[:]) + blobExt, nil
}

// isBlobName says whether name is one of ours; other files in the
// directory are never removed.
func isBlobName(name string) bool {
	id, ok := strings.CutSuffix(name, blobExt)
	if !ok || len(id) != 2*blobIDBytes {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
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

// writeBlob creates dir/name with raw, fsyncs it, then fsyncs dir so the
// name survives a crash too; tee, when not nil, is written every chunk
// after it (a hash: one pass over the bytes, overlapping the disk). On
// failure nothing is left behind.
func writeBlob(ctx context.Context, dir, name string, raw []byte, tee io.Writer) (err error) {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("stage config: %w", err)
	}
	// The new name must be durable too: fsync the directory while the
	// bytes are written (the two flushes overlap).
	dirSynced := make(chan error, 1)
	go func() { dirSynced <- syncDir(dir) }()
	defer func() {
		if derr := <-dirSynced; err == nil && derr != nil {
			err = fmt.Errorf("stage config: %w", derr)
		}
		if err != nil {
			_ = f.Close()
			_ = os.Remove(p)
		}
	}()
	for off := 0; off < len(raw); off += writeChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := raw[off:min(off+writeChunk, len(raw))]
		if _, err := f.Write(chunk); err != nil {
			return fmt.Errorf("stage config: write %s: %w", p, err)
		}
		startWriteback(f, int64(off), int64(len(chunk)))
	}
	// The disk finishes (fsync) while this goroutine feeds tee.
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	var teeErr error
	if tee != nil {
		_, teeErr = tee.Write(raw)
	}
	if err := <-synced; err != nil {
		return fmt.Errorf("stage config: fsync %s: %w", p, err)
	}
	if teeErr != nil {
		return fmt.Errorf("stage config: %w", teeErr)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("stage config: close %s: %w", p, err)
	}
	return nil
}

// readBlob reads an open blob and checks it against its meta record: the
// size and the SHA-256. A short or changed file is corrupt, named.
func readBlob(f *os.File, m streamMeta, stream string) ([]byte, error) {
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
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != m.Hash {
		return nil, fmt.Errorf("%w: stream %q generation %d: %s hashes to %s, meta says %s", store.ErrCorrupt, stream, m.Generation, f.Name(), got, m.Hash)
	}
	return raw, nil
}

// openBlob opens the blob a meta record names; a missing one is corrupt.
func openBlob(dir string, m streamMeta, stream string) (*os.File, error) {
	p := filepath.Join(dir, m.Blob)
	if !isBlobName(m.Blob) {
		return nil, fmt.Errorf("%w: stream %q generation %d: meta names blob %q, not a blob file name", store.ErrCorrupt, stream, m.Generation, m.Blob)
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

// removeOrphans removes every blob in dir that keep does not name.
func removeOrphans(dir string, keep map[string]bool) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || !isBlobName(e.Name()) || keep[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("remove unreferenced %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}

// staged is a blob written by StageConfig, not yet named by a meta record.
type staged struct {
	s      *Store
	stream string
	name   string
	size   int

	mu   sync.Mutex
	done bool
}

var _ store.Staged = (*staged)(nil)

// StageConfig implements store.Stager: it writes raw to a new blob file
// (feeding tee as it goes) and fsyncs the file and the blob directory.
// Nothing refers to the blob until Commit; a crash leaves it unreferenced
// and the next Open removes it.
func (s *Store) StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (store.Staged, error) {
	if stream == "" {
		return nil, errors.New("bolt store: stream name is empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := newBlobName()
	if err != nil {
		return nil, err
	}
	if err := writeBlob(ctx, s.blobDir, name, raw, tee); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("store %s: %w", s.path, err)
	}
	return &staged{s: s, stream: stream, name: name, size: len(raw)}, nil
}

// Commit implements store.Staged: one bbolt transaction that checks
// expected_generation and writes the meta record naming the blob (a few
// pages, fsynced), then removes the previous generation's blob.
func (g *staged) Commit(ctx context.Context, st store.Stream, expected uint64) (store.Stream, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return store.Stream{}, false, errors.New("bolt store: staged config already committed or discarded")
	}
	g.done = true
	if st.Name != g.stream || len(st.Config) != g.size {
		_ = g.s.removeBlob(g.name)
		return store.Stream{}, false, fmt.Errorf("bolt store: commit of stream %q (%d bytes) does not match what was staged (stream %q, %d bytes)", st.Name, len(st.Config), g.stream, g.size)
	}
	out, unchanged, prev, wrote, err := g.s.commitMeta(ctx, st, expected, g.name)
	switch {
	case err != nil && wrote:
		// The transaction failed after it wrote: the meta naming the blob
		// may be on disk. Keep the blob; the next Open removes it if no
		// meta names it.
	case err != nil || unchanged:
		_ = g.s.removeBlob(g.name)
	case prev != "":
		// Removing a 20 MiB file costs milliseconds of journal work:
		// done after the ack, by the remover (see retire).
		g.s.retire(prev)
	}
	return out, unchanged, err
}

// Discard implements store.Staged.
func (g *staged) Discard() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil
	}
	g.done = true
	return g.s.removeBlob(g.name)
}

// removeBlob removes a blob no meta names.
func (s *Store) removeBlob(name string) error {
	if err := os.Remove(filepath.Join(s.blobDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store %s: remove %s: %w", s.path, name, err)
	}
	return nil
}

// removeOld removes a blob that a committed meta no longer names; readers
// that saw the old meta have opened it already (blobMu).
func (s *Store) removeOld(name string) error {
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	return s.removeBlob(name)
}

// retire hands a replaced blob to the remover goroutine. A blob still
// pending when the store closes stays on disk, unreferenced, and the next
// Open removes it.
func (s *Store) retire(name string) {
	s.gcMu.Lock()
	s.gcPending = append(s.gcPending, name)
	s.gcMu.Unlock()
	select {
	case s.gcKick <- struct{}{}:
	default: // already kicked
	}
}

// remover removes retired blobs until stop is closed, then removes what is
// pending and returns. Close owns it.
func (s *Store) remover(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		var stopping bool
		select {
		case <-s.gcKick:
		case <-stop:
			stopping = true
		}
		s.gcMu.Lock()
		names := s.gcPending
		s.gcPending = nil
		s.gcBusy = len(names) > 0
		s.gcMu.Unlock()
		for _, n := range names {
			// Best effort: a blob left behind is removed at the next Open.
			_ = s.removeOld(n)
		}
		s.gcMu.Lock()
		s.gcBusy = false
		s.gcStopped = stopping
		s.gcIdle.Broadcast()
		s.gcMu.Unlock()
		if stopping {
			return
		}
	}
}

// WaitRemoved returns once the blobs replaced so far are removed (or the
// store is closed), so that a test or a benchmark can tell the removal
// apart from what it measures next.
func (s *Store) WaitRemoved() {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	for (len(s.gcPending) > 0 || s.gcBusy) && !s.gcStopped {
		s.gcIdle.Wait()
	}
}
