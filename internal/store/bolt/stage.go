package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"unicode/utf8"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// The pool of free record files (names durable, content stale) keeps at
// least poolMin for the next stages, and as many as were ever out of it at
// once (up to poolCap): staged by pushes under way, or replaced and
// waiting for the index before they come back. So concurrent pushes
// neither create files (and flush the directory) on the ack path nor
// remove the ones that come back (docs/performance.md, scenario 7).
const (
	poolMin = 2
	poolCap = 128
)

// poolLimit is how many free files the pool keeps now (poolMu held).
func (s *Store) poolLimit() int { return min(max(poolMin, s.peakOut), poolCap) }

// countOut updates the peak of files out of the pool (poolMu held).
func (s *Store) countOut() { s.peakOut = max(s.peakOut, s.staging+s.retiring) }

// streamState is a stream's current generation, in memory: the truth the
// commits check expected_generation against and readers read.
type streamState struct {
	// commitMu serialises the commits of one stream up to their place in
	// the flusher's queue, so generations are handed out in order, once,
	// and flushed and acked in that order.
	commitMu sync.Mutex
	// meta and exists (guarded by Store.mu) are the last acked
	// generation: what readers see. head and headExists (guarded by
	// Store.mu) are the last sealed one, acked or queued for the flush:
	// what the next commit's generation, expected_generation and hash are
	// checked against. A queued record is acked or the store fails, so
	// head is never a generation that a later commit could skip.
	meta       streamMeta
	exists     bool
	head       streamMeta
	headExists bool
	// unwritten (guarded by Store.mu) says meta's record is not in its
	// file yet (acked through the commit log, written by the background
	// goroutine): readers read data, its bytes, instead.
	unwritten bool
	data      []byte
}

func (s *Store) state(name string) *streamState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.streams[name]
	if ss == nil {
		ss = &streamState{}
		s.streams[name] = ss
	}
	return ss
}

// errClosed is returned by a stage or commit after Close.
var errClosed = errors.New("bolt store: closed")

// begin counts a stage or commit under way (end ends it), or refuses it:
// errClosed after Close, the failure after a failed commit.
func (s *Store) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.failed != nil {
		return s.failed
	}
	s.ops.Add(1)
	return nil
}

func (s *Store) end() { s.ops.Done() }

// fail makes every later stage and commit fail: a record whose write or
// flush failed may or may not be on disk, so only the next Open may decide
// which generation it holds.
func (s *Store) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = fmt.Errorf("store %s: a commit could not be made durable, restart to recover: %w", s.path, err)
	}
	return s.failed
}

// takeFile returns a record file to stage into: a free one from the pool
// (its name already durable) or, when the pool is empty, a new one (fresh:
// its name must still be made durable).
func (s *Store) takeFile() (f *os.File, name string, fresh bool, err error) {
	s.poolMu.Lock()
	s.staging++
	s.countOut()
	for len(s.pool) > 0 && f == nil {
		e := s.pool[len(s.pool)-1]
		s.pool = s.pool[:len(s.pool)-1]
		name, f = e.name, e.f
		if f == nil {
			if f, err = os.OpenFile(filepath.Join(s.blobDir, name), os.O_RDWR, 0); err != nil {
				f = nil // gone: create one instead
			}
		}
	}
	empty := len(s.pool) == 0
	s.poolMu.Unlock()
	if empty {
		s.kick(func() { s.refill = true })
	}
	if f != nil {
		return f, name, false, nil
	}
	if name, err = newRecName(); err == nil {
		f, err = os.OpenFile(filepath.Join(s.blobDir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		s.unstage()
		return nil, "", false, fmt.Errorf("stage config: %w", err)
	}
	return f, name, true, nil
}

// unstage ends a stage counted by takeFile (its file committed, released
// or removed).
func (s *Store) unstage() {
	s.poolMu.Lock()
	s.staging--
	s.poolMu.Unlock()
}

// release returns a record file whose header the store did not write to
// the pool, still open (or removes it when the pool is full). Its stale
// header, if it has one, is of a generation the index already passed:
// never replayed.
func (s *Store) release(f *os.File, name string) {
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	s.poolAdd(name, f)
}

// poolFile is a free record file; f is its open descriptor, or nil (opened
// when it is taken).
type poolFile struct {
	name string
	f    *os.File
}

// poolAdd adds a free record file to the pool, or closes and removes it
// when the pool is full (poolMu held).
func (s *Store) poolAdd(name string, f *os.File) {
	if len(s.pool) < s.poolLimit() {
		s.pool = append(s.pool, poolFile{name, f})
		return
	}
	if f != nil {
		_ = f.Close()
	}
	// Best effort: a file left behind is removed at the next Open.
	_ = os.Remove(filepath.Join(s.blobDir, name))
}

// heldMax bounds the descriptors kept open for committed records (one
// per stream at most, recycled with them): a store with more streams
// opens the others again when they are recycled.
const heldMax = 256

// hold keeps f, the file of a record just made durable, open until the
// record is replaced and its file recycled, so no stage opens it again.
func (s *Store) hold(name string, f *os.File) {
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	if len(s.held) >= heldMax {
		_ = f.Close()
		return
	}
	s.held[name] = f
}

// closeFiles closes the descriptors of the pool and of held records
// (Close, once nothing stages or recycles any more).
func (s *Store) closeFiles() {
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	for i, e := range s.pool {
		if e.f != nil {
			_ = e.f.Close()
			s.pool[i].f = nil
		}
	}
	for name, f := range s.held {
		_ = f.Close()
		delete(s.held, name)
	}
}

// writebackMin is the smallest stage whose write-back starts as it is
// written: below it the flush that follows soon writes the few pages as
// fast, and the system call would only cost CPU.
const writebackMin = 64 << 10

// deferMax is the size below which a stage writes nothing: the config
// bytes are written with their header and meta in one system call
// (writeRecord) by the flush of a record acked in its own file, or, when
// the record is acked through the commit log, by the background goroutine
// before the index names it, and not at all when a newer generation
// replaced it by then (three writes per
// small push were about a tenth of its CPU).
const deferMax = writebackMin

// DeferBelow implements store.Deferrer: a stage below deferMax writes
// none of its bytes.
func (s *Store) DeferBelow() int { return deferMax }

// writeData writes raw as f's config bytes, handing each chunk to the disk
// at once (from writebackMin on) and then to tee.
func writeData(ctx context.Context, f *os.File, raw []byte, tee io.Writer) error {
	for off := 0; off < len(raw); off += writeChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := raw[off:min(off+writeChunk, len(raw))]
		at := int64(recDataOff + off)
		if _, err := f.WriteAt(chunk, at); err != nil {
			return fmt.Errorf("stage config: write %s: %w", f.Name(), err)
		}
		if len(raw) >= writebackMin {
			startWriteback(f, at, int64(len(chunk)))
		}
		if tee != nil {
			if _, err := tee.Write(chunk); err != nil {
				return fmt.Errorf("stage config: %w", err)
			}
		}
	}
	return nil
}

// staged is config bytes staged into a record file that has no header
// for them yet (below deferMax not written yet: the commit's c.Raw, the
// staged slice, is what the flush or the background writes).
type staged struct {
	s      *Store
	stream string
	name   string
	size   int

	mu   sync.Mutex
	f    *os.File
	done bool
	// deferred is a stage below deferMax: none of its bytes is written.
	deferred bool
}

var _ store.Staged = (*staged)(nil)

// openStage checks a stage's stream name and takes a record file for it,
// counted as under way (begin): the caller calls end.
func (s *Store) openStage(ctx context.Context, stream string) (f *os.File, name string, fresh bool, err error) {
	if stream == "" {
		return nil, "", false, errors.New("bolt store: stream name is empty")
	}
	if !utf8.ValidString(stream) {
		// The record's JSON meta would hold another name (U+FFFD for each
		// bad byte): Open could not match it to its stream, and two such
		// streams would share one name.
		return nil, "", false, fmt.Errorf("bolt store: stream name %q is not valid UTF-8", stream)
	}
	if err := ctx.Err(); err != nil {
		return nil, "", false, err
	}
	if err := s.begin(); err != nil {
		return nil, "", false, err
	}
	if f, name, fresh, err = s.takeFile(); err != nil {
		s.end()
		return nil, "", false, fmt.Errorf("store %s: %w", s.path, err)
	}
	return f, name, fresh, nil
}

// StageConfig implements store.Stager: it writes raw into a free record
// file (feeding tee as it goes) and starts its write-back, without a
// flush; below deferMax it only feeds tee and keeps raw, written whole
// after the commit. Nothing refers to the bytes until their header is
// written; a crash leaves a file without a valid header (or a recycled
// one's stale record, below the index), and the next Open removes it.
func (s *Store) StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (store.Staged, error) {
	f, name, fresh, err := s.openStage(ctx, stream)
	if err != nil {
		return nil, err
	}
	defer s.end()
	var dirSynced chan error
	if fresh {
		// A new file's name must be durable before its record is acked:
		// flush the directory while the bytes are written.
		dirSynced = make(chan error, 1)
		go func() { dirSynced <- syncDir(s.blobDir) }()
	}
	deferred := len(raw) < deferMax
	if deferred {
		err = ctx.Err()
		if err == nil && tee != nil {
			if _, werr := tee.Write(raw); werr != nil {
				err = fmt.Errorf("stage config: %w", werr)
			}
		}
	} else {
		err = writeData(ctx, f, raw, tee)
	}
	if fresh {
		if derr := <-dirSynced; err == nil && derr != nil {
			err = fmt.Errorf("stage config: %w", derr)
		}
	}
	switch {
	case err == nil:
		return &staged{s: s, stream: stream, name: name, size: len(raw), f: f, deferred: deferred}, nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		defer s.unstage()
		if fresh {
			_ = f.Close()
			_ = os.Remove(filepath.Join(s.blobDir, name))
		} else {
			s.release(f, name)
		}
		return nil, err
	default:
		s.unstage()
		_ = f.Close()
		_ = os.Remove(filepath.Join(s.blobDir, name))
		return nil, fmt.Errorf("store %s: %w", s.path, err)
	}
}

// Commit implements store.Staged. Under the stream's commit lock it checks
// expected_generation against the stream's last sealed generation, writes
// (below deferMax: encodes) the record's meta and header (generation =
// that+1) and queues the file for the flusher (group.go), then waits for
// the flush that covers it: after it the record is the durable truth.
// Concurrent commits, of one stream or many, share a flush. The bbolt
// index follows after the return (background.go); the replaced
// generation's file is recycled once the index no longer names it.
func (g *staged) Commit(ctx context.Context, st *config.Config, expected uint64) (*config.Config, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil, false, errors.New("bolt store: staged config already committed or discarded")
	}
	g.done = true
	s := g.s
	defer s.unstage()
	if err := s.begin(); err != nil {
		_ = g.f.Close() // nothing more is written to it; the next Open removes it
		return nil, false, err
	}
	defer s.end()
	if st.Stream != g.stream || len(st.Raw) != g.size {
		s.release(g.f, g.name)
		return nil, false, fmt.Errorf("bolt store: commit of stream %q (%d bytes) does not match what was staged (stream %q, %d bytes)", st.Stream, len(st.Raw), g.stream, g.size)
	}
	if err := checkLabels(st.Labels); err != nil {
		s.release(g.f, g.name)
		return nil, false, err
	}
	ss := s.state(st.Stream)
	req, out, err := g.seal(ctx, ss, st, expected)
	if err != nil {
		return nil, false, err
	}
	if err := <-req.done; err != nil {
		return nil, false, err
	}
	// unchanged: the record it returns is durable now
	return out, req.f == nil, nil
}

// seal does the part of Commit under the stream's commit lock: the checks
// against the last sealed generation, the record's meta and header, and
// its place in the flusher's queue. A nil req with a nil error is never
// returned; req.f == nil is an unchanged push waiting for the head's
// flush.
func (g *staged) seal(ctx context.Context, ss *streamState, st *config.Config, expected uint64) (*flushReq, *config.Config, error) {
	s := g.s
	ss.commitMu.Lock()
	defer ss.commitMu.Unlock()
	s.mu.Lock()
	cur, exists, failed := ss.head, ss.headExists, s.failed
	s.mu.Unlock()
	if failed != nil {
		s.release(g.f, g.name)
		return nil, nil, failed
	}
	if expected > 0 && expected != cur.Generation {
		s.release(g.f, g.name)
		return nil, nil, fmt.Errorf("stream %q is at generation %d, expected %d: %w", st.Stream, cur.Generation, expected, store.ErrConflict)
	}
	if exists && cur.Hash == st.Hash {
		// Same hash, same bytes: the stored meta with the caller's bytes,
		// once the flush that covers it (if still queued) is done.
		s.release(g.f, g.name)
		req := &flushReq{done: make(chan error, 1)}
		s.enqueue(req)
		return req, configOf(cur, st.Raw), nil
	}
	// Last chance to give up before writing.
	if err := ctx.Err(); err != nil {
		s.release(g.f, g.name)
		return nil, nil, err
	}
	m := streamMeta{
		Stream:     st.Stream,
		Generation: cur.Generation + 1,
		Hash:       st.Hash,
		Format:     st.Format.String(),
		Size:       g.size,
		Labels:     cloneLabels(st.Labels),
		AcceptTime: st.AcceptTime,
		Blob:       g.name,
	}
	var hdr, meta []byte
	var err error
	if g.deferred {
		// Written whole by the flusher or the background (writeRecord).
		hdr, meta, err = encodeRec(m)
		if err != nil {
			s.release(g.f, g.name)
			return nil, nil, err
		}
	} else if meta, err = writeRec(g.f, m); err != nil {
		_ = g.f.Close()
		// The header may or may not be on disk: keep the file, refuse
		// more commits; the next Open decides from what is on disk.
		return nil, nil, s.fail(err)
	}
	prev := ""
	if exists {
		prev = cur.Blob
	}
	req := &flushReq{f: g.f, m: m, hdr: hdr, meta: meta, data: st.Raw, unwritten: g.deferred, prev: prev, ss: ss, done: make(chan error, 1)}
	s.mu.Lock()
	ss.head, ss.headExists = m, true
	s.mu.Unlock()
	s.enqueue(req)
	return req, st.WithGeneration(m.Generation), nil
}

// checkLabels refuses labels JSON cannot hold as they are (the record
// would read back other labels than the ones acked).
func checkLabels(l map[string]string) error {
	for k, v := range l {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("bolt store: label %q=%q is not valid UTF-8", k, v)
		}
	}
	return nil
}

// Discard implements store.Staged: the file goes back to the pool.
func (g *staged) Discard() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil
	}
	g.done = true
	g.s.release(g.f, g.name)
	g.s.unstage()
	return nil
}
