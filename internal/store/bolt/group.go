package bolt

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/confighub/confighub/config"
)

// Group commit. A commit writes its record's meta and header without a
// flush and queues the file for the flusher goroutine, which takes
// everything queued at once (the commits that arrived while the previous
// flush ran) and makes all of it durable, then acks each. A batch of one
// record fdatasyncs its own file. A batch of several writes the
// small records (data up to logMaxEntry) once more, back to back, as
// entries of the commit log (<path>.log) and fdatasyncs the log: one
// flush for all of them; larger records fdatasync their own files beside
// it. The record files of logged records are flushed by the background
// goroutine before the index names them, so the index still names only
// records durable in their own file, and an entry whose generation the
// index has reached is no longer needed: the log is reused (a new epoch)
// once the index covers every entry of the current one.
//
// Commit log layout:
//
//	[0, 24)     header: magic "chublog1", epoch (u64 LE), CRC-32C of
//	            [0, 16) (u32 LE), 4 bytes zero
//	[4096, ...) entries, back to back: magic "chlgent1", epoch (u64 LE),
//	            metaLen (u32 LE), dataLen (u32 LE), CRC-32C of the 24
//	            bytes before it + meta + data (u32 LE), 4 bytes zero, then
//	            the meta (JSON, naming the record file) and the data
//
// Open reads the entries of the header's epoch up to the first that does
// not check (a batch torn by a crash: never acked; nothing after it was
// acked either, as a batch is acked only after its flush and the next one
// is written after that), and treats each as a record newer than the
// index, like a record file: restored into its file and flushed when it
// is the newest valid generation of its stream. Then it starts a new
// epoch, so no entry is read twice.
const (
	logMagic    = "chublog1"
	entMagic    = "chlgent1"
	logHdrLen   = 24
	entHdrLen   = 32
	logDataOff  = 4096
	logMaxEntry = 256 << 10
	// logCap bounds the log file: past it the log starts a new epoch at
	// logDataOff (once the index covers every entry).
	logCap = 16 << 20
)

func logPathFor(path string) string { return path + ".log" }

// flushReq is one commit waiting for the flusher. f == nil is a barrier:
// it is acked by the next flush (an unchanged push waits until the record
// it returns is durable).
type flushReq struct {
	f *os.File
	m streamMeta
	// meta is m as the record file holds it (JSON).
	meta []byte
	data []byte
	// unwritten is a record not yet in its file (a stage below
	// deferMax): hdr is its header; the flusher writes it whole before
	// its own flush, or, when the log takes it (logged), the background
	// goroutine does before the index names it.
	unwritten bool
	hdr       []byte
	logged    bool
	// prev is the file of the generation this one replaced ("" if none).
	prev string
	ss   *streamState
	done chan error
}

// commitLog is the open log. The flusher alone writes it (and Open before
// the flusher starts).
type commitLog struct {
	f     *os.File
	epoch uint64
	off   int64
	// lastSeq is the last batch written in this epoch (0: none).
	lastSeq uint64
	// buf is the last batch's entries, reused for the next one.
	buf []byte
}

// logBufKeep bounds the entries buffer the log keeps between batches.
const logBufKeep = 1 << 20

// logEntry is an entry read back at Open.
type logEntry struct {
	m    streamMeta
	data []byte
}

// openLog opens (or creates) the commit log and returns its entries of
// the current epoch. The caller starts a new epoch (restart) once it has
// replayed them.
func openLog(path string) (*commitLog, []logEntry, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open commit log: %w", err)
	}
	l := &commitLog{f: f}
	hdr := make([]byte, logHdrLen)
	_, err = f.ReadAt(hdr, 0)
	switch {
	case errors.Is(err, io.EOF):
		return l, nil, nil // new, or shorter than a header: no entries
	case err != nil:
		_ = f.Close()
		return nil, nil, fmt.Errorf("read commit log: %w", err)
	case string(hdr[:8]) != logMagic || crc32.Checksum(hdr[:16], castagnoli) != binary.LittleEndian.Uint32(hdr[16:]):
		// A header torn at its write: it is written only when every entry
		// before it is covered by the index, so there is nothing to read.
		return l, nil, nil
	}
	l.epoch = binary.LittleEndian.Uint64(hdr[8:])
	var out []logEntry
	for off := int64(logDataOff); ; {
		e, n, ok := readEntry(f, off, l.epoch)
		if !ok {
			break
		}
		out = append(out, e)
		off += n
	}
	return l, out, nil
}

// readEntry reads the entry at off; ok is false at the end of the epoch's
// entries (a torn, stale or missing one).
func readEntry(f *os.File, off int64, epoch uint64) (logEntry, int64, bool) {
	var e logEntry
	hdr := make([]byte, entHdrLen)
	if _, err := f.ReadAt(hdr, off); err != nil {
		return e, 0, false
	}
	metaLen, dataLen := int64(binary.LittleEndian.Uint32(hdr[16:])), int64(binary.LittleEndian.Uint32(hdr[20:]))
	if string(hdr[:8]) != entMagic || binary.LittleEndian.Uint64(hdr[8:]) != epoch ||
		metaLen > recMaxMeta || dataLen > logMaxEntry || off+entHdrLen+metaLen+dataLen > logCap {
		return e, 0, false
	}
	body := make([]byte, metaLen+dataLen)
	if _, err := f.ReadAt(body, off+entHdrLen); err != nil {
		return e, 0, false
	}
	if crc32.Update(crc32.Checksum(hdr[:24], castagnoli), castagnoli, body) != binary.LittleEndian.Uint32(hdr[24:]) {
		return e, 0, false
	}
	if err := json.Unmarshal(body[:metaLen], &e.m); err != nil || int64(e.m.Size) != dataLen || !isNamed(e.m.Blob, recExt) {
		return e, 0, false
	}
	e.data = body[metaLen:]
	if config.Hash(e.data) != e.m.Hash {
		return e, 0, false
	}
	return e, entHdrLen + metaLen + dataLen, true
}

// restart starts a new epoch: the header is written and flushed before
// any entry of the epoch, so an entry is never read under another epoch.
func (l *commitLog) restart(sync func(*os.File) error) error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	// A new random epoch, never 0 and never the old one: entries of an
	// older epoch left past the new ones are not read as new.
	next := binary.LittleEndian.Uint64(b[:]) | 1
	if next == l.epoch {
		next += 2
	}
	hdr := make([]byte, logHdrLen)
	copy(hdr, logMagic)
	binary.LittleEndian.PutUint64(hdr[8:], next)
	binary.LittleEndian.PutUint32(hdr[16:], crc32.Checksum(hdr[:16], castagnoli))
	if _, err := l.f.WriteAt(hdr, 0); err != nil {
		return fmt.Errorf("write commit log header: %w", err)
	}
	if err := sync(l.f); err != nil {
		return fmt.Errorf("fdatasync commit log: %w", err)
	}
	l.epoch, l.off, l.lastSeq = next, logDataOff, 0
	return nil
}

// encodeEntries returns the log entries of reqs, back to back.
func (l *commitLog) encodeEntries(reqs []*flushReq) []byte {
	n := 0
	for _, r := range reqs {
		n += entHdrLen + len(r.meta) + len(r.data)
	}
	buf := l.buf[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	if cap(buf) <= logBufKeep {
		l.buf = buf
	} else {
		l.buf = nil
	}
	for _, r := range reqs {
		// The header is written in place (buf has room for every entry):
		// a header array of its own would escape to the heap.
		buf = buf[:len(buf)+entHdrLen]
		hdr := buf[len(buf)-entHdrLen:]
		copy(hdr, entMagic)
		binary.LittleEndian.PutUint64(hdr[8:], l.epoch)
		binary.LittleEndian.PutUint32(hdr[16:], uint32(len(r.meta)))
		binary.LittleEndian.PutUint32(hdr[20:], uint32(len(r.data)))
		crc := crc32.Update(crc32.Checksum(hdr[:24], castagnoli), castagnoli, r.meta)
		binary.LittleEndian.PutUint32(hdr[24:], crc32.Update(crc, castagnoli, r.data))
		binary.LittleEndian.PutUint32(hdr[28:], 0)
		buf = append(buf, r.meta...)
		buf = append(buf, r.data...)
	}
	return buf
}

// enqueue hands a sealed record (or a barrier) to the flusher.
func (s *Store) enqueue(r *flushReq) {
	s.gcMu.Lock()
	s.gcQueue = append(s.gcQueue, r)
	s.gcMu.Unlock()
	s.gcCond.Signal()
}

// flusher makes the queued records durable, a batch at a time, until
// Close stops it (after every commit under way returned).
func (s *Store) flusher() {
	defer close(s.gcDone)
	var seq uint64
	for {
		s.gcMu.Lock()
		for len(s.gcQueue) == 0 && !s.gcStopping {
			s.gcCond.Wait()
		}
		batch := s.gcQueue
		s.gcQueue = nil
		stopping, hook := s.gcStopping, s.hookFlush
		s.gcMu.Unlock()
		if len(batch) == 0 && stopping {
			return
		}
		if hook != nil {
			hook(len(batch))
		}
		seq++
		s.flushBatch(batch, seq)
	}
}

// flushBatch makes batch durable (see the top of this file) and acks it;
// a failed flush fails the store and every commit of the batch.
func (s *Store) flushBatch(batch []*flushReq, seq uint64) {
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	var recs []*flushReq
	for _, r := range batch {
		if r.f != nil {
			recs = append(recs, r)
		}
	}
	err := failed
	if err == nil {
		err = s.flushRecords(recs, seq)
		if err != nil {
			err = s.fail(err)
		}
	}
	if err != nil {
		for _, r := range recs {
			_ = r.f.Close()
		}
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	for _, r := range recs {
		s.hold(r.m.Blob, r.f)
	}
	s.mu.Lock()
	for _, r := range recs {
		if r.m.Generation > r.ss.meta.Generation || !r.ss.exists {
			r.ss.meta, r.ss.exists = r.m, true
			r.ss.unwritten, r.ss.data = r.unwritten && r.logged, nil
			if r.ss.unwritten {
				r.ss.data = r.data
			}
		}
	}
	s.mu.Unlock()
	replaced := 0
	for _, r := range recs {
		if r.prev != "" {
			replaced++
		}
	}
	s.poolMu.Lock()
	s.retiring += replaced
	s.countOut()
	s.poolMu.Unlock()
	// In commit order, so the index and the recycling see each stream's
	// generations in order. A replaced record that was acked through the
	// log and never written to its file (the background had not taken it)
	// is recycled now: its file holds what it held in the pool, a stale
	// record the index passed or none, and a newer generation of its
	// stream is durable, so Open never restores it.
	var early []string
	s.kick(func() {
		for _, r := range recs {
			if cur, ok := s.pending[r.m.Stream]; !ok || cur.Generation < r.m.Generation {
				s.pending[r.m.Stream] = r.m
			}
			if _, ok := s.unwritten[r.prev]; ok && r.prev != "" {
				delete(s.unwritten, r.prev)
				delete(s.logged, r.prev)
				early = append(early, r.prev)
			} else if r.prev != "" {
				s.retired = append(s.retired, r.prev)
			}
			if r.logged {
				s.logged[r.m.Blob] = true
				s.loggedSeq = seq
				s.lagBytes += int64(entHdrLen + len(r.meta) + len(r.data))
				if r.unwritten {
					s.unwritten[r.m.Blob] = recWrite{hdr: r.hdr, meta: r.meta, data: r.data}
				}
			}
		}
		s.lagRecs += len(recs)
	})
	for _, r := range batch {
		r.done <- nil
	}
	for _, name := range early {
		s.recycle(name)
	}
}

// flushRecords writes and flushes recs: one record by its own fdatasync;
// several through the log (the small ones; each large one by its own
// fdatasync, at the same time), marking those the log took (logged).
func (s *Store) flushRecords(recs []*flushReq, seq uint64) error {
	var small, own []*flushReq
	for _, r := range recs {
		if r.m.Size <= logMaxEntry && len(recs) > 1 && s.clog != nil {
			small = append(small, r)
		} else {
			own = append(own, r)
		}
	}
	if len(small) > 0 {
		epoch := s.clog.epoch
		buf := s.clog.encodeEntries(small)
		switch {
		case !s.logRoom(int64(len(buf))):
			own, small = append(own, small...), nil
		case s.clog.epoch != epoch:
			buf = s.clog.encodeEntries(small)
		}
		if len(small) > 0 {
			if _, err := s.clog.f.WriteAt(buf, s.clog.off); err != nil {
				return fmt.Errorf("write commit log: %w", err)
			}
			s.clog.off += int64(len(buf))
			s.clog.lastSeq = seq
			for _, r := range small {
				r.logged = true
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(own)+1)
	for i, r := range own {
		wg.Go(func() {
			if r.unwritten {
				if errs[i] = writeRecord(r.f, r.hdr, r.meta, r.data); errs[i] != nil {
					return
				}
			}
			if err := s.sync(r.f); err != nil {
				errs[i] = fmt.Errorf("fdatasync %s: %w", r.f.Name(), err)
			}
		})
	}
	if len(small) > 0 {
		if err := s.sync(s.clog.f); err != nil {
			errs[len(own)] = fmt.Errorf("fdatasync %s: %w", s.clog.f.Name(), err)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// logRoom says whether n more bytes fit in the log, starting a new epoch
// when the current one is full and the index covers all its entries.
func (s *Store) logRoom(n int64) bool {
	if s.clog.off+n <= logCap {
		return true
	}
	if logDataOff+n > logCap {
		return false
	}
	s.bgMu.Lock()
	covered := s.indexedSeq >= s.clog.lastSeq
	s.bgMu.Unlock()
	if !covered {
		return false // the background catches up; until then records flush on their own
	}
	if err := s.clog.restart(s.sync); err != nil {
		// The old epoch's header may or may not be on disk: entries of
		// the new one must not follow it. Flush records on their own.
		s.clog.off = logCap
		return false
	}
	return true
}

// sync is the flush of a record or the log (a test injects a failure).
func (s *Store) sync(f *os.File) error {
	if s.hookSync != nil {
		return s.hookSync(f)
	}
	return fdatasync(f)
}

// recWrite is a record acked through the log that is not yet in its file
// (flushReq.unwritten).
type recWrite struct{ hdr, meta, data []byte }

// syncLogged fdatasyncs the record files of metas that were made durable
// through the log, before the index names them, writing first those not
// yet in their file (unwritten). The records of unwritten that a newer
// generation replaced are not written: their files are recycled.
func (s *Store) syncLogged(metas map[string]streamMeta, logged map[string]bool, unwritten map[string]recWrite) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, m := range metas {
		if !logged[m.Blob] {
			continue
		}
		wg.Go(func() {
			f, err := os.OpenFile(filepath.Join(s.blobDir, m.Blob), os.O_RDWR, 0)
			if err == nil {
				if w, ok := unwritten[m.Blob]; ok {
					err = writeRecord(f, w.hdr, w.meta, w.data)
				}
				if err == nil {
					err = s.sync(f)
				}
				err = errors.Join(err, f.Close())
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("fdatasync %s: %w", m.Blob, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
