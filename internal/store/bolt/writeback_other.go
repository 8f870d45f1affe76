//go:build !linux

package bolt

import "os"

// startWriteback has no portable equivalent: the fsync does all the work.
func startWriteback(*os.File, int64, int64) {}

// fdatasync is fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }
