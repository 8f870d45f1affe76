package bolt

import (
	"os"
	"testing"
	"time"
)

// WithSyncDirHook makes Open call fn for every directory it flushes while
// creating the data dir.
func WithSyncDirHook(fn func(dir string)) Option {
	return func(o *options) {
		o.syncDir = func(dir string) error { fn(dir); return syncDir(dir) }
	}
}

// WithLockTimeout bounds the wait for the file lock (default 1s); past it
// Open fails with ErrInUse.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// WithInlineBelow writes configurations below n inline (default 64 KiB).
func WithInlineBelow(n int) Option { return func(o *options) { o.inlineBelow = n } }

// WithoutGroupCommit gives each commit its own index transaction.
func WithoutGroupCommit() Option { return func(o *options) { o.noGroup = true } }

// Path is the store file's path.
func (s *Store) Path() string { return s.path }

// SetHookSync flushes record files with fn instead of fdatasync (nil:
// fdatasync again).
func (s *Store) SetHookSync(fn func(*os.File) error) {
	s.sync = fdatasync
	if fn != nil {
		s.sync = fn
	}
}

// SetHookIndex runs fn before each commit's index transaction, after its
// record file was flushed.
func (s *Store) SetHookIndex(fn func()) { s.hookIndex = fn }

// IOErr is the store's report of an I/O error.
func (s *Store) IOErr(op, file string, err error) error { return s.ioErr(op, file, err) }

// BlobNames lists the record directory beside the store file at path,
// sorted.
func BlobNames(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir(path + ".blobs")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
