package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// ErrNotReady is returned by a guarded store while etcd is unreachable.
var ErrNotReady = errors.New("etcd is unreachable (the replica is not ready)")

// Guard wraps the shared store for the hub and the engine's recorder: while
// the last probe found etcd unreachable every call fails at once with
// ErrNotReady (the hub answers Unavailable), and every call is bounded by
// timeout so a push or an applied record never hangs on a lost etcd.
func Guard(st store.Store, ready func() bool, timeout time.Duration) store.Store {
	if timeout <= 0 {
		timeout = DefaultOpTimeout
	}
	return &guarded{st: st, ready: ready, timeout: timeout}
}

type guarded struct {
	st      store.Store
	ready   func() bool
	timeout time.Duration
}

var _ store.Store = (*guarded)(nil)

func (g *guarded) enter(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if !g.ready() {
		return nil, nil, ErrNotReady
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	return ctx, cancel, nil
}

func (g *guarded) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return nil, false, err
	}
	defer cancel()
	return g.st.CommitConfig(ctx, c, expected)
}

func (g *guarded) GetStream(ctx context.Context, name string) (*config.Config, error) {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return g.st.GetStream(ctx, name)
}

func (g *guarded) ListStreams(ctx context.Context) ([]*config.Config, error) {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return g.st.ListStreams(ctx)
}

func (g *guarded) PutSink(ctx context.Context, s *confighubv1.Sink) error {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return g.st.PutSink(ctx, s)
}

func (g *guarded) DeleteSink(ctx context.Context, name string) error {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return g.st.DeleteSink(ctx, name)
}

func (g *guarded) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return g.st.ListSinks(ctx)
}

func (g *guarded) RecordApplied(ctx context.Context, a store.Applied) error {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return fmt.Errorf("record applied generation of sink %q: %w", a.Sink, err)
	}
	defer cancel()
	return g.st.RecordApplied(ctx, a)
}

func (g *guarded) ListApplied(ctx context.Context) ([]store.Applied, error) {
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return g.st.ListApplied(ctx)
}

// Close does not close the wrapped store: its owner does.
func (g *guarded) Close() error { return nil }

var _ store.ConvergedStore = (*guarded)(nil)

// errNoConverged is returned when the wrapped store keeps no convergence
// records (every store of the repository keeps them: storetest checks it).
var errNoConverged = errors.New("the store keeps no convergence records")

func (g *guarded) RecordConverged(ctx context.Context, c store.Converged) error {
	cs, ok := g.st.(store.ConvergedStore)
	if !ok {
		return errNoConverged
	}
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return fmt.Errorf("record convergence of stream %q: %w", c.Stream, err)
	}
	defer cancel()
	return cs.RecordConverged(ctx, c)
}

func (g *guarded) ListConverged(ctx context.Context) ([]store.Converged, error) {
	cs, ok := g.st.(store.ConvergedStore)
	if !ok {
		return nil, errNoConverged
	}
	ctx, cancel, err := g.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return cs.ListConverged(ctx)
}
