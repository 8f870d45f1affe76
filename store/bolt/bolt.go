package bolt

import (
	"bytes"
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
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/store"
)

var (
	_ store.Store  = (*Store)(nil)
	_ store.Stager = (*Store)(nil)
)

// ErrInUse is wrapped by Open when another process holds the file lock.
var ErrInUse = errors.New("data dir in use by another process")

// layoutVersion 2 keeps config bytes in blob files; 1 kept them inline
// under keyConfig. This hub reads both and writes 2; a hub that reads only
// 1 refuses a layout 2 file instead of misreading it.
const (
	layoutVersion = "2"
	layoutV1      = "1"
)

var (
	bucketInfo    = []byte("info")
	bucketStreams = []byte("streams")
	bucketSinks   = []byte("sinks")
	bucketApplied = []byte("applied")
	keyLayout     = []byte("layout")
	keyMeta       = []byte("meta")
	// keyConfig holds a layout 1 stream's config bytes inline.
	keyConfig = []byte("config")
)

// Option configures Open.
type Option func(*options)

type options struct {
	lockTimeout    time.Duration
	mmapSize       int
	noFreelistSync bool
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

// Store is a store.Store on one bbolt file.
type Store struct {
	db      *bbolt.DB
	path    string
	blobDir string
	// blobMu orders removing a replaced blob after readers that saw the
	// old meta record opened it (readers hold it shared from reading the
	// meta until the blob is open).
	blobMu sync.RWMutex
	// Replaced blobs are removed after the ack by remover.
	gcMu      sync.Mutex
	gcIdle    *sync.Cond // on gcMu: nothing pending or being removed
	gcPending []string
	gcBusy    bool
	gcStopped bool
	gcKick    chan struct{}
	gcStop    chan struct{}
	gcDone    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open opens or creates the store file at path, creating parent
// directories. A file that cannot be read gives an error wrapping
// store.ErrCorrupt and is left untouched; a file locked by another process
// gives ErrInUse.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{lockTimeout: time.Second, mmapSize: 1 << 30}
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("store %s: create data dir: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		// Check an existing file read-only first: nothing is written to a
		// file until every record in it has been read.
		if err := verifyFile(path, blobDirFor(path), o); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path, o, false)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, blobDir: blobDirFor(path),
		gcKick: make(chan struct{}, 1), gcStop: make(chan struct{}), gcDone: make(chan struct{})}
	s.gcIdle = sync.NewCond(&s.gcMu)
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	go s.remover(s.gcStop, s.gcDone)
	return s, nil
}

func openDB(path string, o options, readOnly bool) (db *bbolt.DB, err error) {
	// bbolt trusts the file's meta pages; garbage that passes them can
	// panic or fault. Report it as corrupt rather than crash the hub.
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

func corruptErr(path string, err any) error {
	return fmt.Errorf("store %s: %w: %v (the file is kept as is; move it away to start with an empty store)", path, store.ErrCorrupt, err)
}

// verifyFile opens path read-only and reads every page reachable from its
// root: every key and value, then every record decoded. Pages past the end
// of a truncated file fault (SIGBUS) when read through the mmap, and bbolt
// panics on a page that is not what its parent says; both are reported as
// corrupt.
func verifyFile(path, blobDir string, o options) (err error) {
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
		if v := info.Get(keyLayout); string(v) != layoutVersion && string(v) != layoutV1 {
			return fmt.Errorf("layout version %q, this hub reads %q and %q", v, layoutV1, layoutVersion)
		}
		for _, b := range [][]byte{bucketStreams, bucketSinks, bucketApplied} {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("bucket %q is missing", b)
			}
		}
		var sink byte
		if err := walk(tx.Cursor(), &sink, tx.Bucket); err != nil {
			return err
		}
		// Every stream's config is read and checked against its meta
		// (a blob: present, its size, its SHA-256).
		if _, err := readAll(listStreams(tx, blobDir)); err != nil {
			return err
		}
		if _, err := listSinks(tx); err != nil {
			return err
		}
		_, err := listApplied(tx)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		err = corruptErr(path, err)
	} else if err != nil {
		err = fmt.Errorf("store %s: %w", path, err)
	}
	return err
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

// init creates the buckets of a new file (or moves a layout 1 file to
// layout 2: its inline configs stay readable) and the blob directory, then
// removes the blobs no meta names: staged but never committed, or replaced
// but not yet removed, when the last process stopped.
func (s *Store) init() error {
	if err := os.MkdirAll(s.blobDir, 0o750); err != nil {
		return fmt.Errorf("store %s: create %s: %w", s.path, s.blobDir, err)
	}
	// The directory itself must survive a crash before a blob in it is
	// acknowledged.
	if err := syncDir(filepath.Dir(s.blobDir)); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	keep := map[string]bool{}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if info := tx.Bucket(bucketInfo); info != nil {
			if string(info.Get(keyLayout)) == layoutV1 {
				if err := info.Put(keyLayout, []byte(layoutVersion)); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketStreams).ForEachBucket(func(k []byte) error {
				m, err := readMeta(tx.Bucket(bucketStreams).Bucket(k), string(k))
				if m.Blob != "" {
					keep[m.Blob] = true
				}
				return err
			})
		}
		for _, b := range [][]byte{bucketInfo, bucketStreams, bucketSinks, bucketApplied} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %q: %w", b, err)
			}
		}
		return tx.Bucket(bucketInfo).Put(keyLayout, []byte(layoutVersion))
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	if _, err := removeOrphans(s.blobDir, keep); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return nil
}

// Path is the file the store uses.
func (s *Store) Path() string { return s.path }

// streamMeta is what is stored beside a stream's config bytes.
type streamMeta struct {
	Generation uint64            `json:"generation"`
	Hash       string            `json:"hash"`
	Format     string            `json:"format"`
	Size       int               `json:"size"`
	Labels     map[string]string `json:"labels,omitempty"`
	AcceptTime time.Time         `json:"accept_time"`
	// Blob names the file in the blob directory holding the config bytes
	// (layout 2); empty for a layout 1 stream, whose bytes are inline.
	Blob string `json:"blob,omitempty"`
}

type appliedRecord struct {
	Stream     string    `json:"stream"`
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Time       time.Time `json:"time"`
}

func readMeta(b *bbolt.Bucket, name string) (streamMeta, error) {
	var m streamMeta
	raw := b.Get(keyMeta)
	if raw == nil {
		return m, fmt.Errorf("%w: stream %q has no meta record", store.ErrCorrupt, name)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: stream %q meta: %v", store.ErrCorrupt, name, err)
	}
	return m, nil
}

// openStream is a stream read in two steps: the meta record and an open
// blob inside a read transaction (under blobMu), the bytes after it.
type openStream struct {
	st   store.Stream
	meta streamMeta
	f    *os.File
}

// openStreamIn reads a stream's meta and opens its blob, or copies a
// layout 1 stream's inline bytes out of the mmap.
func openStreamIn(b *bbolt.Bucket, name, blobDir string) (openStream, error) {
	m, err := readMeta(b, name)
	if err != nil {
		return openStream{}, err
	}
	f, err := config.ParseFormat(m.Format)
	if err != nil {
		return openStream{}, fmt.Errorf("%w: stream %q: %v", store.ErrCorrupt, name, err)
	}
	o := openStream{meta: m, st: store.Stream{
		Name:       name,
		Generation: m.Generation,
		Hash:       m.Hash,
		Format:     f,
		Labels:     m.Labels,
		AcceptTime: m.AcceptTime,
	}}
	if m.Blob != "" {
		o.f, err = openBlob(blobDir, m, name)
		return o, err
	}
	raw := b.Get(keyConfig)
	if raw == nil || len(raw) != m.Size {
		return openStream{}, fmt.Errorf("%w: stream %q generation %d: config is %d bytes, meta says %d", store.ErrCorrupt, name, m.Generation, len(raw), m.Size)
	}
	o.st.Config = bytes.Clone(raw)
	return o, nil
}

// readAll reads and checks the blobs of streams opened by openStreamIn and
// closes them; on an error from the first step it only closes them.
func readAll(opened []openStream, err error) ([]store.Stream, error) {
	out := make([]store.Stream, 0, len(opened))
	for _, o := range opened {
		if o.f == nil {
			out = append(out, o.st)
			continue
		}
		if err == nil {
			o.st.Config, err = readBlob(o.f, o.meta, o.st.Name)
			out = append(out, o.st)
		}
		_ = o.f.Close()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) streams(tx *bbolt.Tx) *bbolt.Bucket { return tx.Bucket(bucketStreams) }

// CommitConfig implements store.Store: StageConfig then Commit. The
// returned stream shares s.Config (no copy).
func (s *Store) CommitConfig(ctx context.Context, st store.Stream, expected uint64) (store.Stream, bool, error) {
	g, err := s.StageConfig(ctx, st.Name, st.Config, nil)
	if err != nil {
		return store.Stream{}, false, err
	}
	return g.Commit(ctx, st, expected)
}

// commitMeta is the transaction of a commit: it checks expected_generation
// and, unless the hash is the current one, writes the meta record naming
// blob. prev is the blob the previous generation used; wrote says the
// transaction reached its commit (so on an error the new meta may be on
// disk).
func (s *Store) commitMeta(ctx context.Context, st store.Stream, expected uint64, blob string) (out store.Stream, unchanged bool, prev string, wrote bool, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b := s.streams(tx).Bucket([]byte(st.Name))
		var cur streamMeta
		if b != nil {
			var err error
			if cur, err = readMeta(b, st.Name); err != nil {
				return err
			}
		}
		if expected > 0 && expected != cur.Generation {
			return fmt.Errorf("stream %q is at generation %d, expected %d: %w", st.Name, cur.Generation, expected, store.ErrConflict)
		}
		if b != nil && cur.Hash == st.Hash {
			// Same hash, same bytes: return the stored meta with the
			// caller's bytes rather than read them back.
			f, err := config.ParseFormat(cur.Format)
			if err != nil {
				return fmt.Errorf("%w: stream %q: %v", store.ErrCorrupt, st.Name, err)
			}
			out = store.Stream{Name: st.Name, Generation: cur.Generation, Hash: cur.Hash, Format: f,
				Config: st.Config, Labels: cur.Labels, AcceptTime: cur.AcceptTime}
			unchanged = true
			return nil
		}
		// Last chance to give up before writing.
		if err := ctx.Err(); err != nil {
			return err
		}
		if b == nil {
			var err error
			if b, err = s.streams(tx).CreateBucket([]byte(st.Name)); err != nil {
				return fmt.Errorf("create stream %q: %w", st.Name, err)
			}
		}
		m := streamMeta{
			Generation: cur.Generation + 1,
			Hash:       st.Hash,
			Format:     st.Format.String(),
			Size:       len(st.Config),
			Labels:     st.Labels,
			AcceptTime: st.AcceptTime,
			Blob:       blob,
		}
		meta, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := b.Put(keyMeta, meta); err != nil {
			return fmt.Errorf("write meta of %q: %w", st.Name, err)
		}
		// A layout 1 stream's inline bytes are replaced by the blob.
		if err := b.Delete(keyConfig); err != nil {
			return fmt.Errorf("drop inline config of %q: %w", st.Name, err)
		}
		prev = cur.Blob
		out = st
		out.Generation = m.Generation
		wrote = true
		return nil
	})
	if err != nil {
		return store.Stream{}, false, "", wrote, s.wrap(err)
	}
	// Own a copy of the labels so that later changes by the caller or by
	// the receiver do not alias.
	out.Labels = cloneLabels(out.Labels)
	return out, unchanged, prev, false, nil
}

func cloneLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (s *Store) wrap(err error) error {
	if errors.Is(err, store.ErrConflict) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("store %s: %w", s.path, err)
}

// GetStream implements store.Store.
func (s *Store) GetStream(ctx context.Context, name string) (store.Stream, error) {
	if err := ctx.Err(); err != nil {
		return store.Stream{}, err
	}
	var o openStream
	s.blobMu.RLock()
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := s.streams(tx).Bucket([]byte(name))
		if b == nil {
			return fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
		}
		var err error
		o, err = openStreamIn(b, name, s.blobDir)
		return err
	})
	s.blobMu.RUnlock()
	var out store.Stream
	if err == nil {
		var l []store.Stream
		if l, err = readAll([]openStream{o}, nil); err == nil {
			out = l[0]
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.Stream{}, err
	}
	if err != nil {
		return store.Stream{}, s.wrap(err)
	}
	return out, nil
}

// listStreams opens every stream (see openStreamIn); pass the result to
// readAll, also on an error, so the opened blobs are closed.
func listStreams(tx *bbolt.Tx, blobDir string) ([]openStream, error) {
	var out []openStream
	err := tx.Bucket(bucketStreams).ForEachBucket(func(k []byte) error {
		o, err := openStreamIn(tx.Bucket(bucketStreams).Bucket(k), string(k), blobDir)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	return out, err
}

// ListStreams implements store.Store, sorted by name.
func (s *Store) ListStreams(ctx context.Context) ([]store.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opened []openStream
	s.blobMu.RLock()
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		opened, err = listStreams(tx, s.blobDir)
		return err
	})
	s.blobMu.RUnlock()
	out, err := readAll(opened, err)
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
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

// Close stops the remover (after it removed the blobs retired so far) and
// releases the file; it is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.gcStop)
		<-s.gcDone
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}
