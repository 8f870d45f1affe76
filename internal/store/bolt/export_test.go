package bolt

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
