//go:build !linux

package bolt

import (
	"fmt"
	"os"
)

// startWriteback has no portable equivalent: the fsync does all the work.
func startWriteback(*os.File, int64, int64) {}

// fdatasync is fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }

// writeRecord writes a whole record into f: the header at 0, zeros up to
// recDataOff, the config bytes, then the meta.
func writeRecord(f *os.File, hdr, meta, data []byte) error {
	buf := make([]byte, 0, recDataOff+len(data)+len(meta))
	buf = append(append(append(append(buf, hdr...), recPad[:recDataOff-len(hdr)]...), data...), meta...)
	if _, err := f.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("write record to %s: %w", f.Name(), err)
	}
	return nil
}
