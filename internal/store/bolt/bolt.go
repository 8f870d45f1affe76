package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
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
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

var _ store.Store = (*Store)(nil)

// ErrInUse is wrapped by Open when another process holds the file lock.
var ErrInUse = errors.New("data dir in use by another process")

// layoutVersion is in bucket "info"; another layout is refused.
const layoutVersion = "4"

var (
	bucketInfo      = []byte("info")
	bucketStreams   = []byte("streams")
	bucketBlobs     = []byte("blobs")
	bucketSinks     = []byte("sinks")
	bucketApplied   = []byte("applied")
	bucketConverged = []byte("converged")
	buckets         = [][]byte{bucketStreams, bucketBlobs, bucketSinks, bucketApplied, bucketConverged}
	keyLayout       = []byte("layout")
	keyFingerprint  = []byte("fingerprint-key")
)

// Option configures Open.
type Option func(*options)

type options struct {
	keep        store.Retention
	lockTimeout time.Duration          // tests
	inlineBelow int                    // tests
	noGroup     bool                   // tests
	syncDir     func(dir string) error // tests
}

// WithRetention sets the retention (default store.DefaultRetention).
func WithRetention(r store.Retention) Option { return func(o *options) { o.keep = r } }

// Store is a store.Store on one bbolt file and its record files.
type Store struct {
	db          *bbolt.DB
	path        string
	blobDir     string
	keep        store.Retention
	group       group
	inlineBelow int // deferMax but in tests

	mu      sync.Mutex                // guards streams and failed
	streams map[string]*config.Config // each stream's current generation
	locks   store.Locks               // a stream's commits and deletion, check to index write
	failed  error                     // a failed flush or index write, or Close: fails later stages, commits
	ops     sync.WaitGroup            // the stages and commits under way
	close   func() error

	sync      func(*os.File) error // fdatasync but in tests
	hookIndex func()               // tests: runs before a commit's index transaction
}

var errClosed = errors.New("bolt store: closed")

// Open opens or creates the store file at path and loads each stream's current generation.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{lockTimeout: time.Second, syncDir: syncDir, keep: store.DefaultRetention(), inlineBelow: deferMax}
	for _, opt := range opts {
		opt(&o)
	}
	if err := mkdirDurable(filepath.Dir(path), o.syncDir); err != nil {
		return nil, fmt.Errorf("store %s: create data dir: %w", path, err)
	}
	existed := hasContent(path)
	db, err := openDB(path, o)
	if err == nil && existed {
		// Nothing is written to a file until every page of it was read.
		if err = verify(db, path); err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, blobDir: path + ".blobs", keep: o.keep, streams: map[string]*config.Config{}, inlineBelow: o.inlineBelow, sync: fdatasync}
	s.group.s, s.group.off = s, o.noGroup
	s.close = sync.OnceValue(func() error {
		s.mu.Lock()
		s.failed = errClosed
		s.mu.Unlock()
		s.ops.Wait()
		return s.db.Close()
	})
	if err := s.init(o); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// mkdirDurable creates dir and its parents, flushing each parent so an acked record stays.
func mkdirDurable(dir string, sync func(string) error) error {
	if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
		return nil
	}
	if err := mkdirDurable(filepath.Dir(dir), sync); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return sync(filepath.Dir(dir))
}

// openDB opens the bbolt file; garbage that makes bbolt panic or fault is reported as corrupt.
func openDB(path string, o options) (db *bbolt.DB, err error) {
	if err := precheckSize(path); err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, corruptErr(path, r)
		}
	}()
	// 1 GiB of address space: growing below it needs no remap (which waits
	// for every read transaction).
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: o.lockTimeout, FreelistType: bbolt.FreelistMapType, InitialMmapSize: 1 << 30})
	var pe *fs.PathError
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("store %s: %w (file lock not released within %v)", path, ErrInUse, o.lockTimeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), !errors.As(err, &pe) && hasContent(path):
		// The last: bbolt refusing what it read ("file size too small").
		return nil, corruptErr(path, err)
	}
	return nil, fmt.Errorf("store %s: open: %w", path, err)
}

// precheckSize refuses a file shorter than its newest meta page says: a fault
// recovered inside bbolt.Open would leave it mapped and locked.
func precheckSize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt reports it
	}
	defer f.Close()
	// A meta page: a 16-byte page header, then magic, version, page size,
	// flags (4 bytes each), root (16), freelist, high-water page id, txid
	// (8 each) and an FNV-64a checksum of the 56 bytes before it.
	read := func(off int64) (pageSize, pgid, txid uint64, ok bool) {
		var b [64]byte
		if _, err := f.ReadAt(b[:], off+16); err != nil || binary.LittleEndian.Uint32(b[0:4]) != 0xED0CDAED {
			return 0, 0, 0, false
		}
		h := fnv.New64a()
		h.Write(b[:56])
		le := binary.LittleEndian
		return uint64(le.Uint32(b[8:12])), le.Uint64(b[40:48]), le.Uint64(b[48:56]), h.Sum64() == le.Uint64(b[56:])
	}
	size, pgid, txid, ok := read(0)
	second := int64(4096)
	if ok && size >= 512 {
		second = int64(size)
	}
	if size1, pgid1, txid1, ok1 := read(second); ok1 && (!ok || txid1 > txid) {
		size, pgid, ok = size1, pgid1, true
	}
	fi, err := f.Stat()
	if need := int64(pgid * size); ok && size >= 512 && err == nil && need > fi.Size() {
		return corruptErr(path, fmt.Sprintf("truncated: the file has %d bytes, its meta page needs %d", fi.Size(), need))
	}
	return nil
}

func hasContent(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Size() > 0
}

// corruptErr says the bbolt file at path is unreadable as a whole.
func corruptErr(path string, err any) error {
	return fmt.Errorf("store %s: %w: the index file cannot be read: %v (the file is kept as is)", path, store.ErrCorrupt, err)
}

// verify checks the layout and reads everything, reporting a fault or bbolt panic as corrupt.
func verify(db *bbolt.DB, path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = corruptErr(path, r)
		}
	}()
	var layout string
	err = db.View(func(tx *bbolt.Tx) error {
		info := tx.Bucket(bucketInfo)
		if info == nil {
			return errors.New("bucket \"info\" is missing: not a confighub store")
		}
		if layout = string(info.Get(keyLayout)); layout != layoutVersion {
			return nil
		}
		for _, b := range buckets {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("bucket %q is missing", b)
			}
		}
		var sink byte
		return walk(tx.Cursor(), &sink, tx.Bucket)
	})
	if err == nil && layout != layoutVersion {
		return fmt.Errorf("store %s: data layout %q: this hub reads layout %q only (the file is kept as is)", path, layout, layoutVersion)
	}
	if err != nil {
		return corruptErr(path, err)
	}
	return nil
}

// walk reads every key and value under c, one byte per page so every overflow page is read.
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

// init creates the record dir and buckets, loads current generations, removes unnamed files.
func (s *Store) init(o options) error {
	if err := mkdirDurable(s.blobDir, o.syncDir); err != nil {
		return fmt.Errorf("store %s: create %s: %w", s.path, s.blobDir, err)
	}
	ready := false
	_ = s.db.View(func(tx *bbolt.Tx) error { ready = tx.Bucket(bucketInfo) != nil; return nil })
	if !ready {
		if err := s.db.Update(func(tx *bbolt.Tx) error {
			for _, b := range append([][]byte{bucketInfo}, buckets...) {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketInfo).Put(keyLayout, []byte(layoutVersion))
		}); err != nil {
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
			s.streams[string(k)] = c
			return err
		})
	})
	if err != nil {
		return err
	}
	return s.removeUnnamed(named)
}

// removeUnnamed removes the record files named does not hold.
func (s *Store) removeUnnamed(named map[string]bool) error {
	ents, err := os.ReadDir(s.blobDir)
	if err != nil {
		return s.ioErr("list", s.blobDir, err)
	}
	for _, e := range ents {
		if p := filepath.Join(s.blobDir, e.Name()); isRecName(e.Name()) && !named[e.Name()] {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return s.ioErr("remove", p, err)
			}
		}
	}
	return syncDir(s.blobDir)
}

// ioErr names the file, the call and the errno of an I/O error.
func (s *Store) ioErr(op, file string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("store %s: %s %s: %w", s.path, op, file, err)
	}
	what := errnoName(errno)
	if errno == syscall.EMFILE || errno == syscall.ENFILE {
		what = "too many open files (" + what + "): raise the open-files limit (ulimit -n, LimitNOFILE=)"
	}
	return fmt.Errorf("store %s: %s %s: %s: %w", s.path, op, file, what, err)
}

// wrap names the store in an error but the sentinels and the context's.
func (s *Store) wrap(err error) error {
	if err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotRetained) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("store %s: %w", s.path, err)
}

// put stores raw (encoded with error err) under key in bucket through db.Update or db.Batch.
func (s *Store) put(ctx context.Context, run func(func(*bbolt.Tx) error) error, bucket []byte, key string, raw []byte, err error) error {
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return err
	}
	return s.wrap(run(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), raw) }))
}

// list decodes every record of bucket, in key order.
func list[T any](s *Store, ctx context.Context, bucket []byte, decode func(k, v []byte) (T, error)) ([]T, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []T
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			r, err := decode(k, v)
			if err != nil {
				return fmt.Errorf("%w: %s record %q: %v", store.ErrCorrupt, bucket, k, err)
			}
			out = append(out, r)
			return nil
		})
	})
	return out, s.wrap(err)
}

func (s *Store) PutSink(ctx context.Context, sp *confighubv1.Sink) error {
	if sp.GetName() == "" {
		return errors.New("bolt store: sink name is empty")
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(sp)
	return s.put(ctx, s.db.Update, bucketSinks, sp.GetName(), raw, err)
}

func (s *Store) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	return list(s, ctx, bucketSinks, func(_, v []byte) (*confighubv1.Sink, error) {
		sp := &confighubv1.Sink{}
		return sp, proto.Unmarshal(v, sp)
	})
}

func (s *Store) DeleteSink(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.wrap(s.db.Update(func(tx *bbolt.Tx) error {
		k := []byte(name)
		sinks, applied := tx.Bucket(bucketSinks), tx.Bucket(bucketApplied)
		if sinks.Get(k) == nil && applied.Get(k) == nil {
			return fmt.Errorf("sink %q: %w", name, store.ErrNotFound)
		}
		return errors.Join(sinks.Delete(k), applied.Delete(k))
	}))
}

// RecordApplied implements store.Store in a shared transaction.
func (s *Store) RecordApplied(ctx context.Context, a store.Applied) error {
	if a.Sink == "" {
		return errors.New("bolt store: applied record without a sink name")
	}
	raw, err := json.Marshal(a)
	return s.put(ctx, s.db.Batch, bucketApplied, a.Sink, raw, err)
}

func (s *Store) ListApplied(ctx context.Context) ([]store.Applied, error) {
	return list(s, ctx, bucketApplied, func(k, v []byte) (store.Applied, error) {
		a := store.Applied{Sink: string(k)}
		return a, json.Unmarshal(v, &a)
	})
}

// RecordConverged implements store.Store in a shared transaction.
func (s *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	raw, err := json.Marshal(c)
	return s.put(ctx, s.db.Batch, bucketConverged, c.Stream, raw, err)
}

func (s *Store) ListConverged(ctx context.Context) ([]store.Converged, error) {
	return list(s, ctx, bucketConverged, func(k, v []byte) (store.Converged, error) {
		c := store.Converged{Stream: string(k)}
		return c, json.Unmarshal(v, &c)
	})
}

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
	return key, s.wrap(err)
}

// Close refuses later stages and commits, waits for those under way and releases the file.
func (s *Store) Close() error { return s.close() }
