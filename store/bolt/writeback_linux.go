package bolt

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's range to disk now,
// without waiting, so that the fsync at the end of a stage finds most of
// the bytes already written. It changes nothing about durability (the
// fsync still decides); an error only means no head start.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
