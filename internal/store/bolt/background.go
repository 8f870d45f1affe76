package bolt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// The background goroutine (owned by Close) does what the ack does not
// wait for: it writes the bbolt index of the records committed since its
// last run (one transaction for all of them), then recycles the files
// those records replaced into the pool, and creates a pool file when a
// stage found the pool empty.

// kick records work for the background goroutine (set runs under bgMu)
// and wakes it.
func (s *Store) kick(set func()) {
	s.bgMu.Lock()
	set()
	s.bgQueued = true
	s.bgMu.Unlock()
	select {
	case s.bgKick <- struct{}{}:
	default: // already kicked
	}
}

// The index trails the acks by up to indexLag records, indexLagBytes of
// the commit log or indexDelay, whichever comes first: under a steady
// load of small pushes its transaction, and the flush of each stream's
// newest record file before it, are shared by many batches instead of
// following each. The lag bounds what
// Open replays and how long the files the indexed records replaced wait
// before they are recycled; the records are durable meanwhile. A stage
// that finds the pool empty, WaitRemoved and Close do not wait.
const (
	indexLag      = 1024
	indexLagBytes = logCap / 4
	indexDelay    = 50 * time.Millisecond
)

// due says whether the background runs now rather than after indexDelay
// (bgMu held).
func (s *Store) due() bool {
	return s.bgForce || s.lagRecs >= s.idxLag || s.lagBytes >= indexLagBytes
}

// takeRefill says whether a stage found the pool empty, and clears it.
func (s *Store) takeRefill() bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	r := s.refill
	s.refill = false
	return r
}

// awaitDue returns once the work queued is due, indexDelay after it was
// first kicked, or at stop (true). A pool found empty is refilled
// meanwhile, at once.
func (s *Store) awaitDue(stop <-chan struct{}) (stopping bool) {
	s.bgMu.Lock()
	due := s.due()
	s.bgMu.Unlock()
	if due {
		return false
	}
	if s.takeRefill() {
		s.refillPool()
	}
	t := s.clock.NewTimer(indexDelay)
	defer t.Stop()
	for {
		select {
		case <-s.bgKick:
			if s.takeRefill() {
				s.refillPool()
			}
			s.bgMu.Lock()
			due = s.due()
			s.bgMu.Unlock()
			if due {
				return false
			}
		case <-t.Chan():
			return false
		case <-stop:
			return true
		}
	}
}

func (s *Store) background(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		var stopping bool
		select {
		case <-s.bgKick:
			s.bgMu.Lock()
			queued := s.bgQueued
			s.bgMu.Unlock()
			if !queued {
				continue // a kick whose work an earlier run took
			}
			stopping = s.awaitDue(stop)
		case <-stop:
			stopping = true
		}
		s.bgMu.Lock()
		s.lagRecs, s.lagBytes, s.bgForce = 0, 0, false
		pending, retired, refill, logged, unwritten, seq := s.pending, s.retired, s.refill, s.logged, s.unwritten, s.loggedSeq
		s.pending, s.retired, s.refill, s.logged, s.unwritten = map[string]streamMeta{}, nil, false, map[string]bool{}, map[string]recWrite{}
		s.bgQueued, s.bgBusy = false, true
		s.bgMu.Unlock()

		if s.hookIndex != nil && len(pending) > 0 {
			s.hookIndex()
		}
		// Once the store failed, the index names nothing more: a flush
		// that succeeds after a failed one proves nothing (fsyncgate) and
		// a record whose write failed may be torn, while the log still
		// holds them; the next Open replays what was acked.
		s.mu.Lock()
		failed := s.failed
		s.mu.Unlock()
		err := failed
		if err == nil {
			// A record acked through the commit log is flushed in its own
			// file before the index names it: the log is reused once the
			// index covers its entries.
			err = s.syncLogged(pending, logged, unwritten)
			if err != nil {
				// fsyncgate: the pages may be lost; only the log holds the
				// record now. Stop, and let the next Open replay it.
				err = s.fail(err)
			} else {
				// In their files now, whatever the index does: readers
				// read them there and the bytes held for them go.
				s.written(pending, unwritten)
				err = s.writeIndex(pending)
			}
		}
		if err != nil {
			// The records are durable; the index catches up at the next
			// run or the next Open (which replays them). Until then the
			// replaced files stay. The unwritten ones are not taken back:
			// either they are in their files now (only the index failed)
			// or the store failed (their log entries are replayed).
			s.bgMu.Lock()
			for k, m := range pending {
				if cur, ok := s.pending[k]; !ok || cur.Generation < m.Generation {
					s.pending[k] = m
				}
			}
			s.retired = append(retired, s.retired...)
			for name := range logged {
				s.logged[name] = true
			}
			s.bgMu.Unlock()
		} else {
			s.bgMu.Lock()
			s.indexedSeq = max(s.indexedSeq, seq)
			s.bgMu.Unlock()
			for _, name := range retired {
				s.recycle(name)
			}
		}
		if refill {
			s.refillPool()
		}

		s.bgMu.Lock()
		if failed == nil { // a failure the commits reported is not the index's
			s.bgErr = err
		}
		s.bgBusy = false
		s.bgStopped = stopping
		s.bgIdle.Broadcast()
		s.bgMu.Unlock()
		if stopping {
			return
		}
	}
}

// writeIndex commits the meta records of pending to bbolt (fsynced).
func (s *Store) writeIndex(pending map[string]streamMeta) error {
	if len(pending) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bbolt.Tx) error { return putMetas(tx, pending) })
	if err != nil {
		return fmt.Errorf("store %s: index: %w", s.path, err)
	}
	return nil
}

// putMetas writes meta records (a layout 1 stream's inline bytes go).
func putMetas(tx *bbolt.Tx, metas map[string]streamMeta) error {
	for name, m := range metas {
		b, err := tx.Bucket(bucketStreams).CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return fmt.Errorf("stream %q: %w", name, err)
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := b.Put(keyMeta, raw); err != nil {
			return fmt.Errorf("write meta of %q: %w", name, err)
		}
		if err := b.Delete(keyConfig); err != nil {
			return fmt.Errorf("drop inline config of %q: %w", name, err)
		}
	}
	return nil
}

// recycle puts a file no record in the index or in memory names any more
// into the pool (or removes it), after readers that saw it finished.
func (s *Store) recycle(name string) {
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	s.retiring--
	f := s.held[name]
	delete(s.held, name)
	if !isNamed(name, recExt) { // a layout 2 file: never staged into
		if f != nil {
			_ = f.Close()
		}
		_ = os.Remove(filepath.Join(s.blobDir, name))
		return
	}
	s.poolAdd(name, f)
}

// refillPool creates one free record file, its name made durable.
func (s *Store) refillPool() {
	s.poolMu.Lock()
	n := len(s.pool)
	s.poolMu.Unlock()
	if n > 0 {
		return
	}
	name, err := newRecName()
	if err != nil {
		return
	}
	p := filepath.Join(s.blobDir, name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	err = errors.Join(f.Sync(), syncDir(s.blobDir))
	if err != nil {
		_ = f.Close()
		_ = os.Remove(p)
		return
	}
	s.release(f, name)
}

// written tells readers that the records of pending found in unwritten
// are in their files now: they read them there again.
func (s *Store) written(pending map[string]streamMeta, unwritten map[string]recWrite) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, m := range pending {
		if _, ok := unwritten[m.Blob]; !ok {
			continue
		}
		if ss := s.streams[name]; ss != nil && ss.unwritten && ss.meta.Blob == m.Blob {
			ss.unwritten, ss.data = false, nil
		}
	}
}
