package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
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

// layoutVersion 3 keeps each generation in a record file that holds its
// own meta (the bbolt meta is an index that may lag behind); 2 kept config
// bytes in plain files named by the bbolt meta; 1 kept them inline under
// keyConfig. This hub reads all three and moves 1 and 2 to 3 at Open; a
// hub that reads only 1 or 2 refuses a layout 3 file instead of
// misreading it.
const (
	layoutVersion = "3"
	layoutV2      = "2"
	layoutV1      = "1"
)

var (
	bucketInfo    = []byte("info")
	bucketStreams = []byte("streams")
	bucketSinks   = []byte("sinks")
	bucketApplied = []byte("applied")
	// bucketConverged holds each stream's last convergence; a file made
	// before it existed gets it at Open.
	bucketConverged = []byte("converged")
	keyLayout       = []byte("layout")
	keyMeta         = []byte("meta")
	// keyFingerprint (in bucketInfo) holds the fingerprint key.
	keyFingerprint = []byte("fingerprint-key")
	// keyConfig holds a layout 1 stream's config bytes inline.
	keyConfig = []byte("config")
)

// Option configures Open.
type Option func(*options)

type options struct {
	lockTimeout    time.Duration
	mmapSize       int
	noFreelistSync bool
	// syncDir flushes a directory (a test records the calls).
	syncDir func(dir string) error
	clock   clockwork.Clock
}

// WithClock sets the clock that times the index's lag (default: the real
// one; tests use a fake).
func WithClock(c clockwork.Clock) Option { return func(o *options) { o.clock = c } }

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
	clock   clockwork.Clock

	// mu guards streams (each stream's current meta) and failed.
	mu      sync.Mutex
	streams map[string]*streamState
	// failed is set when a commit's write or flush failed: every later
	// stage and commit returns it.
	failed error
	// closed is set by Close: every later stage and commit returns
	// errClosed. ops counts the stages and commits under way (Add under
	// mu while !closed), which Close waits for, so that no record is
	// written once Close returned and the file lock is free for another
	// process, whose Open would remove a file it does not know of.
	closed bool
	ops    sync.WaitGroup

	// blobMu orders recycling a replaced file after readers that saw the
	// old meta read it (readers hold it shared from reading the meta until
	// they read the file).
	blobMu sync.RWMutex

	// poolMu guards pool: record files whose names are durable, free to
	// stage into (their content is stale), the count of stages under way
	// (staging) and of replaced files not yet recycled (retiring), and the
	// peak of their sum, which sizes the pool.
	poolMu   sync.Mutex
	pool     []poolFile
	staging  int
	retiring int
	peakOut  int
	// held keeps open the files of committed records (hold), under
	// poolMu, until they are recycled into the pool with their descriptor.
	held map[string]*os.File

	// The flusher's queue (group.go), under gcMu; clog is the commit log,
	// written by the flusher only.
	gcMu       sync.Mutex
	gcCond     *sync.Cond
	gcQueue    []*flushReq
	gcStopping bool
	gcDone     chan struct{}
	clog       *commitLog

	// The background goroutine's work and state, under bgMu.
	bgMu    sync.Mutex
	bgIdle  *sync.Cond // on bgMu: nothing queued or being done
	pending map[string]streamMeta
	retired []string
	// logged names the record files acked through the commit log and not
	// yet flushed on their own; loggedSeq is the flusher's last batch that
	// logged any, indexedSeq the last whose records the index covers.
	logged     map[string]bool
	unwritten  map[string]recWrite
	loggedSeq  uint64
	indexedSeq uint64
	refill     bool
	// lagRecs and lagBytes count the records acked since the background
	// last took its work (and their logged bytes); bgForce asks it to run
	// now (WaitRemoved). See indexLag.
	lagRecs   int
	lagBytes  int64
	idxLag    int // indexLag; smaller in tests
	bgForce   bool
	bgQueued  bool
	bgBusy    bool
	bgStopped bool
	bgErr     error
	bgKick    chan struct{}
	bgStop    chan struct{}
	bgDone    chan struct{}

	// hookIndex, when set (tests), runs before each index write: a test
	// holds it to look at the disk between an ack and the index.
	hookIndex func()
	// hookSync, when set (tests), flushes a commit's record or the commit
	// log instead of fdatasync: a test makes it fail.
	hookSync func(*os.File) error
	// hookFlush, when set (tests, under gcMu), runs before each batch the
	// flusher flushes, with its size: a test holds it to gather a batch.
	hookFlush func(n int)

	closeOnce sync.Once
	closeErr  error
}

// Open opens or creates the store file at path, creating parent
// directories. A file that cannot be read gives an error wrapping
// store.ErrCorrupt and is left untouched; a file locked by another process
// gives ErrInUse.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{lockTimeout: time.Second, mmapSize: 1 << 30, syncDir: syncDir, clock: clockwork.NewRealClock()}
	for _, opt := range opts {
		opt(&o)
	}
	if err := mkdirDurable(filepath.Dir(path), o.syncDir); err != nil {
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
	s := &Store{db: db, path: path, blobDir: blobDirFor(path), clock: o.clock, idxLag: indexLag, streams: map[string]*streamState{},
		pending: map[string]streamMeta{}, logged: map[string]bool{}, unwritten: map[string]recWrite{}, held: map[string]*os.File{},
		bgKick: make(chan struct{}, 1), bgStop: make(chan struct{}), bgDone: make(chan struct{}),
		gcDone: make(chan struct{})}
	s.bgIdle = sync.NewCond(&s.bgMu)
	s.gcCond = sync.NewCond(&s.gcMu)
	if err := s.init(); err != nil {
		if s.clog != nil {
			_ = s.clog.f.Close()
		}
		_ = db.Close()
		return nil, err
	}
	go s.background(s.bgStop, s.bgDone)
	go s.flusher()
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
		if v := string(info.Get(keyLayout)); v != layoutVersion && v != layoutV2 && v != layoutV1 {
			return fmt.Errorf("layout version %q, this hub reads %q, %q and %q", v, layoutV1, layoutV2, layoutVersion)
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
		if _, err := listApplied(tx); err != nil {
			return err
		}
		_, err := listConverged(tx)
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

// init creates the buckets of a new file and the record directory, then
// brings the index up to date with what is on disk: records newer than the
// index (acknowledged after its last commit) are replayed, layout 1 and 2
// streams get a record file, and every file of ours no index record names
// is removed (staged but never committed, torn, replaced, or free).
func (s *Store) init() error {
	if err := os.MkdirAll(s.blobDir, 0o750); err != nil {
		return fmt.Errorf("store %s: create %s: %w", s.path, s.blobDir, err)
	}
	clog, logged, err := openLog(logPathFor(s.path))
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.clog = clog
	// The directory itself (and the commit log's name) must survive a
	// crash before a record in it is acknowledged.
	if err := syncDir(filepath.Dir(s.blobDir)); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	idx := map[string]streamMeta{}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketInfo) == nil {
			for _, b := range [][]byte{bucketInfo, bucketStreams, bucketSinks, bucketApplied} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return fmt.Errorf("create bucket %q: %w", b, err)
				}
			}
			if _, err := tx.CreateBucket(bucketConverged); err != nil {
				return fmt.Errorf("create bucket %q: %w", bucketConverged, err)
			}
			return tx.Bucket(bucketInfo).Put(keyLayout, []byte(layoutVersion))
		}
		if _, err := tx.CreateBucketIfNotExists(bucketConverged); err != nil {
			return fmt.Errorf("create bucket %q: %w", bucketConverged, err)
		}
		return tx.Bucket(bucketStreams).ForEachBucket(func(k []byte) error {
			m, err := readMeta(tx.Bucket(bucketStreams).Bucket(k), string(k))
			idx[string(k)] = m
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	newer, err := s.replay(idx, logged)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	for name, m := range idx {
		if _, ok := newer[name]; ok || isNamed(m.Blob, recExt) {
			continue
		}
		if newer[name], err = s.migrate(name, m); err != nil {
			return fmt.Errorf("store %s: %w", s.path, err)
		}
	}
	if len(newer) > 0 {
		// Replayed and migrated records are flushed; so are their names.
		if err := syncDir(s.blobDir); err != nil {
			return fmt.Errorf("store %s: %w", s.path, err)
		}
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := putMetas(tx, newer); err != nil {
			return err
		}
		return tx.Bucket(bucketInfo).Put(keyLayout, []byte(layoutVersion))
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	keep := map[string]bool{}
	for name, m := range newer {
		idx[name] = m
	}
	for name, m := range idx {
		keep[m.Blob] = true
		m.Stream = name
		s.streams[name] = &streamState{meta: m, exists: true, head: m, headExists: true}
	}
	if _, err := removeOrphans(s.blobDir, keep); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	// Every entry of the log is now covered by the index: a new epoch.
	if err := s.clog.restart(fdatasync); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return nil
}

// replay returns, per stream, the newest valid record whose generation is
// above the index's, in a record file or an entry of the commit log:
// pushes acknowledged after the index's last commit. A file without a
// valid header, or whose bytes do not hash to its meta (a write torn by a
// crash, never acknowledged), is not a record. Each returned file is
// flushed again, in case the crash left it in the page cache only (kill -9
// before the commit's flush returned); a record found only in the log is
// written back into the file its entry names (that file is never recycled
// before the index passes the entry's generation) and flushed.
func (s *Store) replay(idx map[string]streamMeta, logged []logEntry) (map[string]streamMeta, error) {
	ents, err := os.ReadDir(s.blobDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.blobDir, err)
	}
	type cand struct {
		m streamMeta
		f *os.File
		// data is set for a commit log entry (f is nil).
		data []byte
	}
	byStream := map[string][]cand{}
	defer func() {
		for _, cs := range byStream {
			for _, c := range cs {
				_ = c.f.Close()
			}
		}
	}()
	for _, e := range ents {
		if !e.Type().IsRegular() || !isNamed(e.Name(), recExt) {
			continue
		}
		p := filepath.Join(s.blobDir, e.Name())
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		m, err := readRecMeta(f)
		cur, indexed := idx[m.Stream]
		if err == nil && m.Stream != "" && (!indexed || m.Generation > cur.Generation) {
			m.Blob = e.Name()
			byStream[m.Stream] = append(byStream[m.Stream], cand{m: m, f: f})
			continue
		}
		_ = f.Close()
		if err != nil && !errors.Is(err, errNotRec) {
			return nil, err
		}
	}
	for _, e := range logged {
		if cur, indexed := idx[e.m.Stream]; e.m.Stream != "" && (!indexed || e.m.Generation > cur.Generation) {
			byStream[e.m.Stream] = append(byStream[e.m.Stream], cand{m: e.m, data: e.data})
		}
	}
	out := map[string]streamMeta{}
	for stream, cs := range byStream {
		slices.SortFunc(cs, func(a, b cand) int {
			return cmp.Or(cmp.Compare(b.m.Generation, a.m.Generation), cmp.Compare(len(a.data), len(b.data)), strings.Compare(a.m.Blob, b.m.Blob))
		})
		for _, c := range cs {
			if c.f == nil {
				if _, err := config.ParseFormat(c.m.Format); err != nil {
					continue
				}
				if err := restoreRec(s.blobDir, c.m, c.data); err != nil {
					return nil, err
				}
				out[stream] = c.m
				break
			}
			if _, err := readRecData(c.f, c.m); errors.Is(err, errNotRec) {
				continue
			} else if err != nil {
				return nil, err
			}
			if _, err := config.ParseFormat(c.m.Format); err != nil {
				continue
			}
			if err := fdatasync(c.f); err != nil {
				return nil, fmt.Errorf("fdatasync %s: %w", c.f.Name(), err)
			}
			out[stream] = c.m
			break
		}
	}
	return out, nil
}

// restoreRec writes a record found in the commit log into the file its
// entry names (created if missing) and flushes it.
func restoreRec(dir string, m streamMeta, data []byte) error {
	f, err := os.OpenFile(filepath.Join(dir, m.Blob), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("restore stream %q generation %d from the commit log: %w", m.Stream, m.Generation, err)
	}
	err = writeData(context.Background(), f, data, nil)
	if err == nil {
		err = sealRec(f, m)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore stream %q generation %d from the commit log: %w", m.Stream, m.Generation, err)
	}
	return nil
}

// migrate writes a layout 1 or 2 stream's bytes to a record file of the
// same generation (flushed) and returns its meta. A crash before the index
// names it leaves a record no newer than the index: removed at the next
// Open, which migrates again.
func (s *Store) migrate(name string, m streamMeta) (streamMeta, error) {
	var opened []openStream
	err := s.db.View(func(tx *bbolt.Tx) error {
		o, err := openStreamIn(tx.Bucket(bucketStreams).Bucket([]byte(name)), name, s.blobDir)
		opened = append(opened, o)
		return err
	})
	l, err := readAll(opened, err)
	if err != nil {
		return m, fmt.Errorf("move stream %q to a record file: %w", name, err)
	}
	rec, err := newRecName()
	if err != nil {
		return m, err
	}
	p := filepath.Join(s.blobDir, rec)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return m, fmt.Errorf("move stream %q to a record file: %w", name, err)
	}
	m.Stream, m.Blob = name, rec
	if err = writeData(context.Background(), f, l[0].Raw, nil); err == nil {
		err = sealRec(f, m)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return m, fmt.Errorf("move stream %q to a record file: %w", name, err)
	}
	return m, nil
}

// Path is the file the store uses.
func (s *Store) Path() string { return s.path }

// streamMeta is what is stored beside a stream's config bytes.
type streamMeta struct {
	// Stream is the stream's name (in a record file's meta; the index
	// keys by it).
	Stream     string              `json:"stream,omitempty"`
	Generation uint64              `json:"generation"`
	Hash       string              `json:"hash"`
	Format     string              `json:"format"`
	Size       int                 `json:"size"`
	Labels     map[string]string   `json:"labels,omitempty"`
	AcceptTime time.Time           `json:"accept_time"`
	Origin     *store.OriginRecord `json:"origin,omitempty"`
	// Blob names the file in the blob directory holding the config bytes
	// (a record file in layout 3, a plain one in layout 2); empty for a
	// layout 1 stream, whose bytes are inline. Not in a record file's own
	// meta (a file does not know its name).
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
	st   *config.Config
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
	m.Stream = name
	o := openStream{meta: m}
	if m.Blob != "" {
		o.f, err = openBlob(blobDir, m, name)
		return o, err
	}
	raw := b.Get(keyConfig)
	if raw == nil || len(raw) != m.Size {
		return openStream{}, fmt.Errorf("%w: stream %q generation %d: config is %d bytes, meta says %d", store.ErrCorrupt, name, m.Generation, len(raw), m.Size)
	}
	o.st = config.New(name, m.Generation, m.Hash, f, bytes.Clone(raw), nil, m.Labels, m.AcceptTime)
	return o, nil
}

// readAll reads and checks the blobs of streams opened by openStreamIn and
// closes them; on an error from the first step it only closes them.
func readAll(opened []openStream, err error) ([]*config.Config, error) {
	out := make([]*config.Config, 0, len(opened))
	for _, o := range opened {
		if o.f == nil {
			out = append(out, o.st)
			continue
		}
		if err == nil {
			var raw []byte
			raw, err = readBlob(o.f, o.meta, o.meta.Stream)
			out = append(out, configOf(o.meta, raw))
		}
		_ = o.f.Close()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CommitConfig implements store.Store: StageConfig then Commit. The
// returned config shares c.Raw (no copy).
func (s *Store) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	g, err := s.StageConfig(ctx, c.Stream, c.Raw, nil)
	if err != nil {
		return nil, false, err
	}
	return g.Commit(ctx, c, expected)
}

// configOf is the config of a meta record and its bytes.
func configOf(m streamMeta, raw []byte) *config.Config {
	f, _ := config.ParseFormat(m.Format) // checked at Open and at commit
	return config.New(m.Stream, m.Generation, m.Hash, f, raw, nil, cloneLabels(m.Labels), m.AcceptTime).WithOrigin(m.Origin.Origin())
}

// ListGenerations implements store.Store. This layout keeps the current
// generation only.
func (s *Store) ListGenerations(ctx context.Context, name string, before uint64, limit int) ([]store.GenerationInfo, error) {
	c, err := s.GetStream(ctx, name)
	if err != nil {
		return nil, err
	}
	return store.Page([]store.GenerationInfo{store.InfoOf(c)}, before, limit), nil
}

// GetGeneration implements store.Store. This layout keeps the current
// generation only.
func (s *Store) GetGeneration(ctx context.Context, name string, gen uint64) (*config.Config, error) {
	c, err := s.GetStream(ctx, name)
	if err != nil {
		return nil, err
	}
	if c.Generation != gen {
		return nil, store.NotRetained(name, gen, c.Generation, c.Generation)
	}
	return c, nil
}

// errNoDelete is DeleteStream's answer in this layout.
var errNoDelete = fmt.Errorf("the bolt store cannot delete a stream yet: %w", errors.ErrUnsupported)

// DeleteStream implements store.Store: not in this layout.
func (s *Store) DeleteStream(context.Context, string) error { return errNoDelete }

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

// GetStream implements store.Store: the stream's current record, read
// from its file and checked.
func (s *Store) GetStream(ctx context.Context, name string) (*config.Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.blobMu.RLock()
	defer s.blobMu.RUnlock()
	s.mu.Lock()
	ss := s.streams[name]
	var r current
	ok := ss != nil && ss.exists
	if ok {
		r = current{ss.meta, ss.unwritten, ss.data}
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
	}
	return s.read(name, r)
}

// current is a stream's current record as readers see it: its meta, and
// its bytes when its file does not hold them yet (streamState.unwritten).
type current struct {
	m         streamMeta
	unwritten bool
	data      []byte
}

// read reads and checks the record file r names (blobMu held shared), or
// returns the bytes of a record not yet in its file.
func (s *Store) read(name string, r current) (*config.Config, error) {
	m := r.m
	if r.unwritten {
		m.Stream = name
		return configOf(m, r.data), nil
	}
	f, err := openBlob(s.blobDir, m, name)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer func() { _ = f.Close() }()
	raw, err := readBlob(f, m, name)
	if err != nil {
		return nil, s.wrap(err)
	}
	m.Stream = name
	return configOf(m, raw), nil
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
func (s *Store) ListStreams(ctx context.Context) ([]*config.Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.blobMu.RLock()
	defer s.blobMu.RUnlock()
	s.mu.Lock()
	metas := make([]current, 0, len(s.streams))
	for name, ss := range s.streams {
		if ss.exists {
			m := ss.meta
			m.Stream = name
			metas = append(metas, current{m, ss.unwritten, ss.data})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(metas, func(a, b current) int { return strings.Compare(a.m.Stream, b.m.Stream) })
	out := make([]*config.Config, 0, len(metas))
	for _, m := range metas {
		st, err := s.read(m.m.Stream, m)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
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

// FingerprintKey implements store.FingerprintKeyer.
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

// RecordConverged implements store.ConvergedStore.
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

// listConverged reads the convergence records; a file not yet opened by a
// hub that keeps them has none.
func listConverged(tx *bbolt.Tx) ([]store.Converged, error) {
	b := tx.Bucket(bucketConverged)
	if b == nil {
		return nil, nil
	}
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

// ListConverged implements store.ConvergedStore, sorted by stream name.
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

// Close refuses later stages and commits and waits for those under way,
// then stops the background goroutine (after it indexed the records
// committed so far and recycled what they replaced) and releases the file;
// it is idempotent. An index that could not be written is reported; the
// records are durable and the next Open replays them.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.ops.Wait()
		s.gcMu.Lock()
		s.gcStopping = true
		s.gcMu.Unlock()
		s.gcCond.Broadcast()
		<-s.gcDone
		close(s.bgStop)
		<-s.bgDone
		s.closeFiles()
		s.bgMu.Lock()
		err := s.bgErr
		s.bgMu.Unlock()
		s.closeErr = errors.Join(err, s.clog.f.Close(), s.db.Close())
	})
	return s.closeErr
}

// WaitRemoved returns once the background work queued so far (index,
// recycling, pool) is done (or the store is closed), so that a test or a
// benchmark can tell it apart from what it measures next.
func (s *Store) WaitRemoved() {
	s.kick(func() { s.bgForce = true })
	s.waitIdle()
}

// waitIdle returns once the background goroutine did what was queued (or
// stopped), without asking it to run now.
func (s *Store) waitIdle() {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	for (s.bgQueued || s.bgBusy) && !s.bgStopped {
		s.bgIdle.Wait()
	}
}
