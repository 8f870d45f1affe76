package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

var _ store.Store = (*Store)(nil)

// Store keeps everything in maps under one mutex; configs are kept as committed.
type Store struct {
	store.Direct
	mu      sync.Mutex
	closed  bool
	keep    store.Retention
	streams map[string][]*config.Config // retained generations, newest first
	sinks   map[string]*confighubv1.Sink
	applied map[string]store.Applied
	conv    map[string]store.Converged
	fpKey   []byte
}

// Option configures New.
type Option func(*Store)

// WithRetention sets the retention (default store.DefaultRetention).
func WithRetention(r store.Retention) Option { return func(s *Store) { s.keep = r } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{keep: store.DefaultRetention(), streams: map[string][]*config.Config{}, sinks: map[string]*confighubv1.Sink{},
		applied: map[string]store.Applied{}, conv: map[string]store.Converged{}}
	s.Direct = store.Direct{Commit: s.CommitConfig}
	for _, o := range opts {
		o(s)
	}
	return s
}

var errClosed = errors.New("memory store: closed")

// locked runs fn under the mutex once ctx and the store are live.
func locked[T any](m *Store, ctx context.Context, fn func() (T, error)) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if m.closed {
		return zero, errClosed
	}
	return fn()
}

func (m *Store) do(ctx context.Context, fn func() error) error {
	_, err := locked(m, ctx, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

func (m *Store) gens(name string) ([]*config.Config, error) {
	if gens := m.streams[name]; len(gens) > 0 {
		return gens, nil
	}
	return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
}

func (m *Store) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (out *config.Config, unchanged bool, err error) {
	if c.Stream == "" {
		return nil, false, errors.New("memory store: stream name is empty")
	}
	err = m.do(ctx, func() error {
		gens := m.streams[c.Stream]
		var gen uint64
		if len(gens) > 0 {
			gen = gens[0].Generation
		}
		if expected > 0 && expected != gen {
			return fmt.Errorf("stream %q is at generation %d, expected %d: %w", c.Stream, gen, expected, store.ErrConflict)
		}
		if len(gens) > 0 && gens[0].Hash == c.Hash {
			out, unchanged = gens[0], true
			return nil
		}
		out = c.WithGeneration(gen + 1)
		gens = append([]*config.Config{out}, gens...)
		sizes := make([]int64, len(gens))
		for i, g := range gens {
			sizes[i] = int64(len(g.Raw))
		}
		m.streams[c.Stream] = gens[:m.keep.Keep(sizes)]
		return nil
	})
	return out, unchanged, err
}

func (m *Store) DeleteStream(ctx context.Context, name string) error {
	return m.do(ctx, func() error {
		if _, err := m.gens(name); err != nil {
			return err
		}
		delete(m.streams, name)
		delete(m.conv, name)
		return nil
	})
}

func (m *Store) ListGenerations(ctx context.Context, name string, before uint64, limit int) ([]store.GenerationInfo, error) {
	return locked(m, ctx, func() ([]store.GenerationInfo, error) {
		gens, err := m.gens(name)
		var out []store.GenerationInfo
		for _, g := range gens {
			if (before == 0 || g.Generation < before) && (limit <= 0 || len(out) < limit) {
				out = append(out, store.MetaOf(g, g.Generation).Info(g.Stream))
			}
		}
		return out, err
	})
}

func (m *Store) GetGeneration(ctx context.Context, name string, gen uint64) (*config.Config, error) {
	return locked(m, ctx, func() (*config.Config, error) {
		gens, err := m.gens(name)
		if err != nil {
			return nil, err
		}
		for _, g := range gens {
			if g.Generation == gen {
				return g, nil
			}
		}
		return nil, store.NotRetained(name, gen, gens[len(gens)-1].Generation, gens[0].Generation)
	})
}

func (m *Store) GetStream(ctx context.Context, name string) (*config.Config, error) {
	return locked(m, ctx, func() (*config.Config, error) {
		gens, err := m.gens(name)
		if err != nil {
			return nil, err
		}
		return gens[0], nil
	})
}

// sorted returns the values of mp sorted by key, each through f.
func sorted[V, T any](mp map[string]V, f func(V) T) []T {
	out := make([]T, 0, len(mp))
	for _, k := range slices.Sorted(maps.Keys(mp)) {
		out = append(out, f(mp[k]))
	}
	return out
}

func same[T any](v T) T { return v }

func (m *Store) ListStreams(ctx context.Context) ([]*config.Config, error) {
	return locked(m, ctx, func() ([]*config.Config, error) {
		return sorted(m.streams, func(g []*config.Config) *config.Config { return g[0] }), nil
	})
}

func (m *Store) PutSink(ctx context.Context, s *confighubv1.Sink) error {
	if s.GetName() == "" {
		return errors.New("memory store: sink name is empty")
	}
	return m.do(ctx, func() error { m.sinks[s.GetName()] = proto.Clone(s).(*confighubv1.Sink); return nil })
}

func (m *Store) DeleteSink(ctx context.Context, name string) error {
	return m.do(ctx, func() error {
		_, hasSpec := m.sinks[name]
		_, hasApplied := m.applied[name]
		if !hasSpec && !hasApplied {
			return fmt.Errorf("sink %q: %w", name, store.ErrNotFound)
		}
		delete(m.sinks, name)
		delete(m.applied, name)
		return nil
	})
}

func (m *Store) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	return locked(m, ctx, func() ([]*confighubv1.Sink, error) {
		return sorted(m.sinks, func(s *confighubv1.Sink) *confighubv1.Sink { return proto.Clone(s).(*confighubv1.Sink) }), nil
	})
}

func (m *Store) RecordApplied(ctx context.Context, a store.Applied) error {
	if a.Sink == "" {
		return errors.New("memory store: applied record without a sink name")
	}
	return m.do(ctx, func() error { m.applied[a.Sink] = a; return nil })
}

func (m *Store) ListApplied(ctx context.Context) ([]store.Applied, error) {
	return locked(m, ctx, func() ([]store.Applied, error) { return sorted(m.applied, same), nil })
}

func (m *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	return m.do(ctx, func() error { m.conv[c.Stream] = c; return nil })
}

func (m *Store) ListConverged(ctx context.Context) ([]store.Converged, error) {
	return locked(m, ctx, func() ([]store.Converged, error) { return sorted(m.conv, same), nil })
}

func (m *Store) FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error) {
	return locked(m, ctx, func() ([]byte, error) {
		if m.fpKey == nil {
			m.fpKey = append([]byte(nil), newKey...)
		}
		return append([]byte(nil), m.fpKey...), nil
	})
}

// Close makes every later call fail; it is idempotent.
func (m *Store) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
