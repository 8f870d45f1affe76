//go:build !linux

package bolt

import (
	"fmt"
	"os"
	"syscall"
)

// startWriteback has no portable equivalent: the flush does all the work.
func startWriteback(*os.File, int64, int64) {}

// fdatasync is fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }

// errnoName is the number of an errno where no names are at hand.
func errnoName(e syscall.Errno) string { return fmt.Sprintf("errno %d", int(e)) }
