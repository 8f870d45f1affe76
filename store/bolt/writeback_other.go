//go:build !linux

package bolt

import "os"

// startWriteback has no portable equivalent: the fsync does all the work.
func startWriteback(*os.File, int64, int64) {}
