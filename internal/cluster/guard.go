package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// ErrNotReady is returned by a guarded store while etcd is unreachable.
var ErrNotReady = errors.New("etcd is unreachable (the replica is not ready)")

// Guard wraps the shared store: ErrNotReady at once while etcd is unreachable, every call bounded.
func Guard(st store.Store, ready func() bool, timeout time.Duration) store.Store {
	return &guarded{st: st, ready: ready, timeout: cmp.Or(max(timeout, 0), DefaultOpTimeout)}
}

type guarded struct {
	st      store.Store
	ready   func() bool
	timeout time.Duration
}

var _ store.Store = (*guarded)(nil)

// call runs f under g's readiness and timeout.
func call[T any](g *guarded, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	if !g.ready() {
		var zero T
		return zero, ErrNotReady
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return f(ctx)
}

// do is call for a method that returns only an error.
func do(g *guarded, ctx context.Context, f func(context.Context) error) error {
	_, err := call(g, ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

func (g *guarded) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	return g.commit(ctx, func(ctx context.Context) (*config.Config, bool, error) { return g.st.CommitConfig(ctx, c, expected) })
}

// commit runs a commit under g's readiness and timeout.
func (g *guarded) commit(ctx context.Context, f func(context.Context) (*config.Config, bool, error)) (*config.Config, bool, error) {
	var unchanged bool
	stored, err := call(g, ctx, func(ctx context.Context) (*config.Config, error) {
		s, u, err := f(ctx)
		unchanged = u
		return s, err
	})
	return stored, unchanged, err
}

func (g *guarded) GetStream(ctx context.Context, name string) (*config.Config, error) {
	return call(g, ctx, func(ctx context.Context) (*config.Config, error) { return g.st.GetStream(ctx, name) })
}

func (g *guarded) ListStreams(ctx context.Context) ([]*config.Config, error) {
	return call(g, ctx, g.st.ListStreams)
}

func (g *guarded) PutSink(ctx context.Context, s *confighubv1.Sink) error {
	return do(g, ctx, func(ctx context.Context) error { return g.st.PutSink(ctx, s) })
}

func (g *guarded) DeleteSink(ctx context.Context, name string) error {
	return do(g, ctx, func(ctx context.Context) error { return g.st.DeleteSink(ctx, name) })
}

func (g *guarded) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	return call(g, ctx, g.st.ListSinks)
}

func (g *guarded) RecordApplied(ctx context.Context, a store.Applied) error {
	if err := do(g, ctx, func(ctx context.Context) error { return g.st.RecordApplied(ctx, a) }); err != nil {
		return fmt.Errorf("record applied generation of sink %q: %w", a.Sink, err)
	}
	return nil
}

func (g *guarded) ListApplied(ctx context.Context) ([]store.Applied, error) {
	return call(g, ctx, g.st.ListApplied)
}

// Close does not close the wrapped store: its owner does.
func (g *guarded) Close() error { return nil }

func (g *guarded) RecordConverged(ctx context.Context, c store.Converged) error {
	if err := do(g, ctx, func(ctx context.Context) error { return g.st.RecordConverged(ctx, c) }); err != nil {
		return fmt.Errorf("record convergence of stream %q: %w", c.Stream, err)
	}
	return nil
}

func (g *guarded) ListConverged(ctx context.Context) ([]store.Converged, error) {
	return call(g, ctx, g.st.ListConverged)
}

func (g *guarded) DeleteStream(ctx context.Context, name string) error {
	return do(g, ctx, func(ctx context.Context) error { return g.st.DeleteStream(ctx, name) })
}

func (g *guarded) ListGenerations(ctx context.Context, stream string, before uint64, limit int) ([]store.GenerationInfo, error) {
	return call(g, ctx, func(ctx context.Context) ([]store.GenerationInfo, error) {
		return g.st.ListGenerations(ctx, stream, before, limit)
	})
}

func (g *guarded) GetGeneration(ctx context.Context, stream string, gen uint64) (*config.Config, error) {
	return call(g, ctx, func(ctx context.Context) (*config.Config, error) { return g.st.GetGeneration(ctx, stream, gen) })
}

func (g *guarded) FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error) {
	return call(g, ctx, func(ctx context.Context) ([]byte, error) { return g.st.FingerprintKey(ctx, newKey) })
}

func (g *guarded) DeferBelow() int { return g.st.DeferBelow() }

// StageConfig stages through the wrapped store; the handle's Commit is guarded like CommitConfig.
func (g *guarded) StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (store.Staged, error) {
	if !g.ready() {
		return nil, ErrNotReady
	}
	st, err := g.st.StageConfig(ctx, stream, raw, tee)
	if err != nil {
		return nil, err
	}
	return guardedStage{Staged: st, g: g}, nil
}

func (g *guarded) StageStream(ctx context.Context, stream string, size int64) (store.StageWriter, error) {
	if !g.ready() {
		return nil, ErrNotReady
	}
	w, err := g.st.StageStream(ctx, stream, size)
	if err != nil {
		return nil, err
	}
	return guardedWriter{StageWriter: w, g: g}, nil
}

type guardedStage struct {
	store.Staged
	g *guarded
}

// Commit under g, discarding the staged bytes when refused.
func (s guardedStage) Commit(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	stored, unchanged, err := s.g.commit(ctx, func(ctx context.Context) (*config.Config, bool, error) { return s.Staged.Commit(ctx, c, expected) })
	if err != nil {
		_ = s.Discard()
	}
	return stored, unchanged, err
}

type guardedWriter struct {
	store.StageWriter
	g *guarded
}

func (w guardedWriter) Staged() (store.Staged, error) {
	st, err := w.StageWriter.Staged()
	if err != nil {
		return nil, err
	}
	return guardedStage{Staged: st, g: w.g}, nil
}
