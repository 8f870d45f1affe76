package store

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/confighub/confighub/config"
)

// Committer is the commit of a store whose stage writes nothing (memory,
// etcd): its CommitConfig writes the bytes.
type Committer func(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error)

// Direct is StageConfig, DeferBelow and StageStream for such a store,
// which embeds it with Commit set to its CommitConfig.
type Direct struct{ Commit Committer }

// StageConfig implements Store: it feeds tee; Commit writes the bytes.
func (d Direct) StageConfig(_ context.Context, _ string, raw []byte, tee io.Writer) (Staged, error) {
	return StageDirect(d.Commit, raw, tee)
}

// DeferBelow implements Store: a stage never writes.
func (Direct) DeferBelow() int { return math.MaxInt }

// StageStream implements Store: the caller keeps the bytes written.
func (d Direct) StageStream(_ context.Context, _ string, size int64) (StageWriter, error) {
	return StageStreamDirect(d.Commit, size), nil
}

// StageDirect is Direct.StageConfig with commit.
func StageDirect(commit Committer, raw []byte, tee io.Writer) (Staged, error) {
	if tee != nil {
		if _, err := tee.Write(raw); err != nil {
			return nil, err
		}
	}
	return &direct{commit: commit}, nil
}

// StageStreamDirect is Direct.StageStream with commit.
func StageStreamDirect(commit Committer, size int64) StageWriter {
	return &direct{commit: commit, size: size}
}

// direct is a stage that counts what it is written (the caller keeps it).
type direct struct {
	commit  Committer
	size, n int64
}

func (d *direct) Commit(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	return d.commit(ctx, c, expected)
}

func (d *direct) Write(p []byte) (int, error) {
	if d.n+int64(len(p)) > d.size {
		return 0, fmt.Errorf("stage: %d bytes written past the announced %d", d.n+int64(len(p))-d.size, d.size)
	}
	d.n += int64(len(p))
	return len(p), nil
}

func (d *direct) Staged() (Staged, error) {
	if d.n != d.size {
		return nil, fmt.Errorf("stage: %d of %d bytes written", d.n, d.size)
	}
	return d, nil
}

func (*direct) Discard() error { return nil }
