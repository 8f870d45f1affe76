package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/confighub/confighub/internal/store"
)

// streamWriter is a stage whose bytes arrive in pieces: each is written
// at its offset in the record file as it arrives and handed to the disk
// (startWriteback), so the commit's flush finds most of them written.
type streamWriter struct {
	s      *Store
	stream string
	f      *os.File
	name   string
	fresh  bool
	// dirSynced reports the directory flush of a fresh file's name.
	dirSynced chan error
	size, off int64

	mu   sync.Mutex
	done bool
}

// StageStream implements store.StreamStager: a stage like StageConfig's
// whose bytes come through Write.
func (s *Store) StageStream(ctx context.Context, stream string, size int64) (store.StageWriter, error) {
	if size < 0 {
		return nil, fmt.Errorf("bolt store: stage of %d bytes", size)
	}
	f, name, fresh, err := s.openStage(ctx, stream)
	if err != nil {
		return nil, err
	}
	defer s.end()
	w := &streamWriter{s: s, stream: stream, f: f, name: name, fresh: fresh, size: size}
	if fresh {
		w.dirSynced = make(chan error, 1)
		go func() { w.dirSynced <- syncDir(s.blobDir) }()
	}
	return w, nil
}

// Write implements store.StageWriter.
func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return 0, errors.New("bolt store: write to an ended stage")
	}
	if w.off+int64(len(p)) > w.size {
		return 0, fmt.Errorf("bolt store: stage of %d bytes got %d", w.size, w.off+int64(len(p)))
	}
	if err := w.s.begin(); err != nil {
		return 0, err
	}
	defer w.s.end()
	at := recDataOff + w.off
	if _, err := w.f.WriteAt(p, at); err != nil {
		return 0, fmt.Errorf("store %s: stage config: write %s: %w", w.s.path, w.f.Name(), err)
	}
	startWriteback(w.f, at, int64(len(p)))
	w.off += int64(len(p))
	return len(p), nil
}

// Staged implements store.StageWriter.
func (w *streamWriter) Staged() (store.Staged, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, errors.New("bolt store: stage already ended")
	}
	w.done = true
	var err error
	if w.fresh {
		if derr := <-w.dirSynced; derr != nil {
			err = fmt.Errorf("store %s: stage config: %w", w.s.path, derr)
		}
	}
	if err == nil && w.off != w.size {
		err = fmt.Errorf("bolt store: stage of %d bytes ended after %d", w.size, w.off)
	}
	if err != nil {
		w.drop()
		return nil, err
	}
	return &staged{s: w.s, stream: w.stream, name: w.name, size: int(w.size), f: w.f}, nil
}

// Discard implements store.StageWriter.
func (w *streamWriter) Discard() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	if w.fresh {
		<-w.dirSynced
	}
	w.drop()
	return nil
}

// drop ends a stage that is not committed: its file goes back to the pool
// (a fresh one whose name may not be durable is removed).
func (w *streamWriter) drop() {
	defer w.s.unstage()
	if w.fresh {
		_ = w.f.Close()
		_ = os.Remove(filepath.Join(w.s.blobDir, w.name))
		return
	}
	w.s.release(w.f, w.name)
}
