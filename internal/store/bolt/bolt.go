package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/store"
)

var _ store.Store = (*Store)(nil)

// ErrInUse is wrapped by Open when another process holds the file lock.
var ErrInUse = errors.New("data dir in use by another process")

// layoutVersion is written in bucket "info"; a file of another layout is
// refused, not read.
const layoutVersion = "4"

var (
	bucketInfo      = []byte("info")
	bucketStreams   = []byte("streams")
	bucketBlobs     = []byte("blobs")
	bucketSinks     = []byte("sinks")
	bucketApplied   = []byte("applied")
	bucketConverged = []byte("converged")
	keyLayout       = []byte("layout")
	// keyFingerprint (in bucketInfo) holds the fingerprint key.
	keyFingerprint = []byte("fingerprint-key")
)

// Option configures Open.
type Option func(*options)

type options struct {
	lockTimeout    time.Duration
	mmapSize       int
	noFreelistSync bool
	keep           store.Retention
	inlineBelow    int
	noGroup        bool
	// syncDir flushes a directory (a test records the calls).
	syncDir func(dir string) error
}

// WithLockTimeout bounds the wait for the file lock (default 1s); past it
// Open fails with ErrInUse.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// WithInitialMmapSize sets bbolt's initial mmap size (default 1 GiB of
// address space, not disk): growing the file below it needs no remap,
// which would wait for every open read transaction.
func WithInitialMmapSize(n int) Option { return func(o *options) { o.mmapSize = n } }

// WithNoFreelistSync stops writing bbolt's freelist on every commit; it is
// rebuilt by scanning the file at open instead. Durability is the same.
func WithNoFreelistSync() Option { return func(o *options) { o.noFreelistSync = true } }

// WithRetention sets how many generations of each stream are kept with
// their bytes (default store.DefaultRetention).
func WithRetention(r store.Retention) Option { return func(o *options) { o.keep = r } }

// Store is a store.Store on one bbolt file and a directory of record
// files beside it (see the package doc).
type Store struct {
	db      *bbolt.DB
	path    string
	blobDir string
	keep    store.Retention
	group   group
	// inlineBelow is deferMax (other values in benchmarks).
	inlineBelow int

	// mu guards streams, closed and failed.
	mu      sync.Mutex
	streams map[string]*stream
	// failed is set when a commit's flush or index write failed: every
	// later stage and commit returns it.
	failed error
	// closed is set by Close: every later stage and commit returns
	// errClosed. ops counts the stages and commits under way (Add under
	// mu while !closed), which Close waits for, so that nothing is
	// written once Close returned and the file lock is free for another
	// process, whose Open removes the record files it does not know of.
	closed bool
	ops    sync.WaitGroup

	// hookSync, when set (tests), flushes a record file instead of
	// fdatasync: a test makes it fail.
	hookSync func(*os.File) error
	// hookIndex, when set (tests), runs before each index transaction of
	// a commit, after its record file was flushed.
	hookIndex func()

	closeOnce sync.Once
	closeErr  error
}

var errClosed = errors.New("bolt store: closed")

// Open opens or creates the store file at path, creating parent
// directories, and loads every stream's current generation. A bbolt file
// that cannot be read gives an error wrapping store.ErrCorrupt and is left
// untouched; a record that fails its checks names itself (see loadErr); a
// file locked by another process gives ErrInUse.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{lockTimeout: time.Second, mmapSize: 1 << 30, syncDir: syncDir, keep: store.DefaultRetention(), inlineBelow: deferMax}
	for _, opt := range opts {
		opt(&o)
	}
	if err := mkdirDurable(filepath.Dir(path), o.syncDir); err != nil {
		return nil, fmt.Errorf("store %s: create data dir: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		// Check an existing file read-only first: nothing is written to a
		// file until every page of it has been read.
		if err := verifyFile(path, o); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path, o, false)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, blobDir: path + ".blobs", keep: o.keep.Normalized(), streams: map[string]*stream{}}
	s.group.s, s.group.off, s.inlineBelow = s, o.noGroup, o.inlineBelow
	if err := s.init(o); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// mkdirDurable creates dir and its missing parents, and flushes the
// parent of each one it created: a record acked in a new data dir must not
// vanish with the data dir's own entry at a power loss.
func mkdirDurable(dir string, sync func(string) error) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := sync(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

func openDB(path string, o options, readOnly bool) (db *bbolt.DB, err error) {
	// bbolt trusts the file's meta pages; garbage that passes them can
	// panic or fault. Report it as corrupt rather than crash the hub.
	if err := precheckSize(path); err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, corruptErr(path, r)
		}
	}()
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:         o.lockTimeout,
		ReadOnly:        readOnly,
		FreelistType:    bbolt.FreelistMapType,
		NoFreelistSync:  o.noFreelistSync,
		InitialMmapSize: o.mmapSize,
	})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("store %s: %w (file lock not released within %v)", path, ErrInUse, o.lockTimeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, corruptErr(path, err)
	default:
		// Any other failure on a file with content that is not an OS error
		// (permissions, missing dir) is bbolt refusing what it read, e.g.
		// "file size too small".
		var pe *fs.PathError
		if fi, serr := os.Stat(path); serr == nil && fi.Size() > 0 && !errors.As(err, &pe) {
			return nil, corruptErr(path, err)
		}
		return nil, fmt.Errorf("store %s: open: %w", path, err)
	}
}

// corruptErr says the bbolt file at path is unreadable as a whole.
func corruptErr(path string, err any) error {
	return fmt.Errorf("store %s: %w: the index file cannot be read: %v (the file is kept as is)", path, store.ErrCorrupt, err)
}

// verifyFile opens path read-only and reads every page reachable from its
// root: every key and value. Pages past the end of a truncated file fault
// (SIGBUS) when read through the mmap, and bbolt panics on a page that is
// not what its parent says; both are reported as corrupt.
func verifyFile(path string, o options) (err error) {
	db, err := openDB(path, o, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("store %s: close after check: %w", path, cerr)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = corruptErr(path, r)
		}
	}()
	err = db.View(func(tx *bbolt.Tx) error {
		info := tx.Bucket(bucketInfo)
		if info == nil {
			return errors.New("bucket \"info\" is missing: not a confighub store")
		}
		if v := string(info.Get(keyLayout)); v != layoutVersion {
			return errLayout(v)
		}
		for _, b := range [][]byte{bucketStreams, bucketBlobs, bucketSinks, bucketApplied, bucketConverged} {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("bucket %q is missing", b)
			}
		}
		var sink byte
		return walk(tx.Cursor(), &sink, tx.Bucket)
	})
	var le layoutErr
	switch {
	case errors.As(err, &le):
		return fmt.Errorf("store %s: %w", path, err)
	case err != nil && !errors.Is(err, store.ErrCorrupt):
		return corruptErr(path, err)
	case err != nil:
		return fmt.Errorf("store %s: %w", path, err)
	}
	return nil
}

// layoutErr is a file of another layout (a pre-release build's).
type layoutErr string

func errLayout(v string) error { return layoutErr(v) }

func (v layoutErr) Error() string {
	return fmt.Sprintf("data layout %q: this hub reads layout %q only (the file is kept as is)", string(v), layoutVersion)
}

// walk visits every key and value under c, touching one byte per page of
// each value so that every overflow page is read.
func walk(c *bbolt.Cursor, sink *byte, bucket func([]byte) *bbolt.Bucket) error {
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			b := bucket(k)
			if b == nil {
				return fmt.Errorf("key %q has no value and is not a bucket", k)
			}
			if err := walk(b.Cursor(), sink, b.Bucket); err != nil {
				return err
			}
			continue
		}
		for i := 0; i < len(v); i += 4096 {
			*sink ^= v[i]
		}
		if len(v) > 0 {
			*sink ^= v[len(v)-1]
		}
	}
	return nil
}

// init creates the buckets of a new file and the record directory, loads
// every stream's current generation, and removes every record file no
// retained generation names (staged but never committed, or dropped).
func (s *Store) init(o options) error {
	if err := mkdirDurable(s.blobDir, o.syncDir); err != nil {
		return fmt.Errorf("store %s: create %s: %w", s.path, s.blobDir, err)
	}
	// A file that has every bucket is not written to at Open: a record
	// that fails its checks leaves it as it was.
	ready := false
	if err := s.db.View(func(tx *bbolt.Tx) error { ready = tx.Bucket(bucketInfo) != nil; return nil }); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	if !ready {
		err := s.db.Update(func(tx *bbolt.Tx) error {
			info, err := tx.CreateBucket(bucketInfo)
			if err != nil {
				return err
			}
			if err := info.Put(keyLayout, []byte(layoutVersion)); err != nil {
				return err
			}
			for _, b := range [][]byte{bucketStreams, bucketBlobs, bucketSinks, bucketApplied, bucketConverged} {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store %s: %w", s.path, err)
		}
	}
	named := map[string]bool{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketBlobs).ForEach(func(k, _ []byte) error { named[string(k)] = true; return nil }); err != nil {
			return err
		}
		return tx.Bucket(bucketStreams).ForEachBucket(func(k []byte) error {
			c, err := s.loadCurrent(tx.Bucket(bucketStreams).Bucket(k), string(k))
			if err != nil {
				return err
			}
			st := &stream{}
			st.cur.Store(c)
			s.streams[string(k)] = st
			return nil
		})
	})
	if err != nil {
		return err
	}
	return s.removeUnnamed(named)
}

// removeUnnamed removes the record files of ours that named does not
// hold; other files in the directory are left alone.
func (s *Store) removeUnnamed(named map[string]bool) error {
	d, err := os.Open(s.blobDir)
	if err != nil {
		return s.ioErr("open", s.blobDir, err)
	}
	defer func() { _ = d.Close() }()
	removed := false
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			if isRecName(n) && !named[n] {
				if rerr := os.Remove(filepath.Join(s.blobDir, n)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
					return s.ioErr("remove", filepath.Join(s.blobDir, n), rerr)
				}
				removed = true
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			break
		}
		if err != nil {
			return s.ioErr("list", s.blobDir, err)
		}
	}
	if removed {
		return syncDir(s.blobDir)
	}
	return nil
}

// ioErr reports an I/O error of op on file as what it is: the file, the
// call and the errno; too many open files says which limit to raise.
func (s *Store) ioErr(op, file string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == syscall.EMFILE || errno == syscall.ENFILE {
			return fmt.Errorf("store %s: %s %s: too many open files (%s): raise the open-files limit (ulimit -n, LimitNOFILE=): %w", s.path, op, file, errnoName(errno), err)
		}
		return fmt.Errorf("store %s: %s %s: %s: %w", s.path, op, file, errnoName(errno), err)
	}
	return fmt.Errorf("store %s: %s %s: %w", s.path, op, file, err)
}

// Path is the store file's path.
func (s *Store) Path() string { return s.path }

func (s *Store) wrap(err error) error {
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotRetained) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("store %s: %w", s.path, err)
}

// PutSink implements store.Store.
func (s *Store) PutSink(ctx context.Context, sp *confighubv1.Sink) error {
	if sp.GetName() == "" {
		return errors.New("bolt store: sink name is empty")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(sp)
	if err != nil {
		return fmt.Errorf("encode sink %q: %w", sp.GetName(), err)
	}
	return s.wrapNil(s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSinks).Put([]byte(sp.GetName()), raw)
	}))
}

// FingerprintKey implements store.Store.
func (s *Store) FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var key []byte
	err := s.db.Update(func(tx *bbolt.Tx) error {
		info := tx.Bucket(bucketInfo)
		if v := info.Get(keyFingerprint); len(v) > 0 {
			key = append([]byte(nil), v...)
			return nil
		}
		key = append([]byte(nil), newKey...)
		return info.Put(keyFingerprint, key)
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return key, nil
}

func (s *Store) wrapNil(err error) error {
	if err == nil {
		return nil
	}
	return s.wrap(err)
}

// DeleteSink implements store.Store: it removes the spec and the applied
// record; ErrNotFound when neither exists.
func (s *Store) DeleteSink(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		k := []byte(name)
		sinks, applied := tx.Bucket(bucketSinks), tx.Bucket(bucketApplied)
		if sinks.Get(k) == nil && applied.Get(k) == nil {
			return fmt.Errorf("sink %q: %w", name, store.ErrNotFound)
		}
		if err := sinks.Delete(k); err != nil {
			return err
		}
		return applied.Delete(k)
	})
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	return s.wrapNil(err)
}

func listSinks(tx *bbolt.Tx) ([]*confighubv1.Sink, error) {
	var out []*confighubv1.Sink
	err := tx.Bucket(bucketSinks).ForEach(func(k, v []byte) error {
		sp := &confighubv1.Sink{}
		if err := proto.Unmarshal(v, sp); err != nil {
			return fmt.Errorf("%w: sink %q: %v", store.ErrCorrupt, k, err)
		}
		out = append(out, sp)
		return nil
	})
	return out, err
}

// ListSinks implements store.Store, sorted by name.
func (s *Store) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*confighubv1.Sink
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		out, err = listSinks(tx)
		return err
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// RecordApplied implements store.Store. Concurrent calls share one
// transaction (bbolt Batch), each returns once that is fsynced.
func (s *Store) RecordApplied(ctx context.Context, a store.Applied) error {
	if a.Sink == "" {
		return errors.New("bolt store: applied record without a sink name")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := json.Marshal(appliedRecord{Stream: a.Stream, Generation: a.Generation, Hash: a.Hash, Time: a.Time})
	if err != nil {
		return err
	}
	// Idempotent, as Batch may run it twice.
	return s.wrapNil(s.db.Batch(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketApplied).Put([]byte(a.Sink), raw)
	}))
}

func listApplied(tx *bbolt.Tx) ([]store.Applied, error) {
	var out []store.Applied
	err := tx.Bucket(bucketApplied).ForEach(func(k, v []byte) error {
		var r appliedRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("%w: applied record of %q: %v", store.ErrCorrupt, k, err)
		}
		out = append(out, store.Applied{Sink: string(k), Stream: r.Stream, Generation: r.Generation, Hash: r.Hash, Time: r.Time})
		return nil
	})
	return out, err
}

// ListApplied implements store.Store, sorted by sink name.
func (s *Store) ListApplied(ctx context.Context) ([]store.Applied, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Applied
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		out, err = listApplied(tx)
		return err
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

type convergedRecord struct {
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
}

// RecordConverged implements store.Store.
func (s *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := json.Marshal(convergedRecord{Generation: c.Generation, Time: c.Time})
	if err != nil {
		return err
	}
	// Idempotent, as Batch may run it twice.
	return s.wrapNil(s.db.Batch(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketConverged).Put([]byte(c.Stream), raw)
	}))
}

// listConverged reads the convergence records.
func listConverged(tx *bbolt.Tx) ([]store.Converged, error) {
	b := tx.Bucket(bucketConverged)
	var out []store.Converged
	err := b.ForEach(func(k, v []byte) error {
		var r convergedRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("%w: convergence record of %q: %v", store.ErrCorrupt, k, err)
		}
		out = append(out, store.Converged{Stream: string(k), Generation: r.Generation, Time: r.Time})
		return nil
	})
	return out, err
}

// ListConverged implements store.Store, sorted by stream name.
func (s *Store) ListConverged(ctx context.Context) ([]store.Converged, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Converged
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		out, err = listConverged(tx)
		return err
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// Close refuses later stages and commits, waits for those under way, and
// releases the file; it is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.ops.Wait()
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

type appliedRecord struct {
	Stream     string    `json:"stream"`
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Time       time.Time `json:"time"`
}
