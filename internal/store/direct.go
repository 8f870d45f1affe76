package store

import (
	"context"
	"fmt"
	"io"

	"github.com/confighub/confighub/config"
)

// Committer is the commit of a store whose stage writes nothing (memory,
// etcd): its CommitConfig writes the bytes.
type Committer func(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error)

// StageDirect is StageConfig for such a store: it feeds tee and returns a
// handle whose Commit is commit.
func StageDirect(commit Committer, raw []byte, tee io.Writer) (Staged, error) {
	if tee != nil {
		if _, err := tee.Write(raw); err != nil {
			return nil, err
		}
	}
	return direct(commit), nil
}

// StageStreamDirect is StageStream for such a store: it counts the bytes
// written (the caller keeps them) and commits them with commit.
func StageStreamDirect(commit Committer, size int64) StageWriter {
	return &directWriter{commit: commit, size: size}
}

type direct Committer

func (d direct) Commit(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	return d(ctx, c, expected)
}

func (direct) Discard() error { return nil }

type directWriter struct {
	commit  Committer
	size, n int64
}

func (w *directWriter) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.size {
		return 0, fmt.Errorf("stage: %d bytes written past the announced %d", w.n+int64(len(p))-w.size, w.size)
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *directWriter) Staged() (Staged, error) {
	if w.n != w.size {
		return nil, fmt.Errorf("stage: %d of %d bytes written", w.n, w.size)
	}
	return direct(w.commit), nil
}

func (w *directWriter) Discard() error { return nil }
