//go:build !linux

package bolt

import (
	"fmt"
	"os"
	"syscall"
)

func startWriteback(*os.File, int64, int64) {}

func fdatasync(f *os.File) error { return f.Sync() }

func errnoName(e syscall.Errno) string { return fmt.Sprintf("errno %d", int(e)) }
