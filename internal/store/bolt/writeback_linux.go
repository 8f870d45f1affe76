package bolt

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's range to disk now,
// without waiting, so that the flush at the commit finds most of the bytes
// already written. It changes nothing about durability (the flush still
// decides); an error only means no head start.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// fdatasync flushes f's data and the metadata needed to read it back (its
// size, its blocks), not its times.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// errnoName is the symbolic name of an errno (EIO, EMFILE).
func errnoName(e unix.Errno) string { return unix.ErrnoName(e) }
