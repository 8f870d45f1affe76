package bolt

import (
	"fmt"
	"io"
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

// fdatasync flushes f's data and the metadata needed to read it back (its
// size, its blocks), not its times: one flush, and none of the journal
// when a recycled file is overwritten in place.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// writeRecord writes a whole record into f in one system call: the header
// at 0, zeros up to recDataOff, the config bytes, then the meta.
func writeRecord(f *os.File, hdr, meta, data []byte) error {
	iov := [][]byte{hdr, recPad[:recDataOff-len(hdr)], data, meta}
	n, err := unix.Pwritev(int(f.Fd()), iov, 0)
	if err == nil && n != recDataOff+len(data)+len(meta) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("write record to %s: %w", f.Name(), err)
	}
	return nil
}
