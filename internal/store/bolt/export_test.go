package bolt

import (
	"os"
	"testing"
)

// PoolMax is how many free record files a store keeps when its stages do
// not overlap.
const PoolMax = poolMin

// WithSyncDirHook makes Open call fn for every directory it flushes while
// creating the data dir.
func WithSyncDirHook(fn func(dir string)) Option {
	return func(o *options) {
		o.syncDir = func(dir string) error { fn(dir); return syncDir(dir) }
	}
}

// BlobNames lists the record directory beside the store file at path,
// sorted.
func BlobNames(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir(blobDirFor(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
