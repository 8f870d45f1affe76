package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

var _ store.Store = (*Store)(nil)

// Store keeps streams, sinks and applied records in maps under one mutex.
// A committed config is kept as it is (configs are immutable): its bytes
// are held once, by the caller and the store. The retained generations of
// a stream are held in memory too (it is a store for tests).
type Store struct {
	mu     sync.Mutex
	closed bool
	keep   store.Retention
	// streams holds each stream's retained generations, newest first.
	streams map[string][]*config.Config
	sinks   map[string]*confighubv1.Sink
	applied map[string]store.Applied
	conv    map[string]store.Converged
	fpKey   []byte
}

// Option configures New.
type Option func(*Store)

// WithRetention sets how many generations of each stream are kept
// (default store.DefaultRetention).
func WithRetention(r store.Retention) Option { return func(s *Store) { s.keep = r } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		keep:    store.DefaultRetention(),
		streams: map[string][]*config.Config{},
		sinks:   map[string]*confighubv1.Sink{},
		applied: map[string]store.Applied{},
		conv:    map[string]store.Converged{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (m *Store) current(name string) *config.Config {
	if gens := m.streams[name]; len(gens) > 0 {
		return gens[0]
	}
	return nil
}

var errClosed = errors.New("memory store: closed")

func (m *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.closed {
		return errClosed
	}
	return nil
}

// CommitConfig implements store.Store: the stored config shares c's
// bytes and labels (a config is immutable).
func (m *Store) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	if c.Stream == "" {
		return nil, false, errors.New("memory store: stream name is empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, false, err
	}
	cur := m.current(c.Stream)
	var gen uint64
	if cur != nil {
		gen = cur.Generation
	}
	if expected > 0 && expected != gen {
		return nil, false, fmt.Errorf("stream %q is at generation %d, expected %d: %w", c.Stream, gen, expected, store.ErrConflict)
	}
	if cur != nil && cur.Hash == c.Hash {
		return cur, true, nil
	}
	stored := c.WithGeneration(gen + 1)
	gens := append([]*config.Config{stored}, m.streams[c.Stream]...)
	sizes := make([]int64, len(gens))
	for i, g := range gens {
		sizes[i] = int64(len(g.Raw))
	}
	m.streams[c.Stream] = gens[:m.keep.Keep(sizes)]
	return stored, false, nil
}

// StageConfig implements store.Store: the commit holds the bytes.
func (m *Store) StageConfig(_ context.Context, _ string, raw []byte, tee io.Writer) (store.Staged, error) {
	return store.StageDirect(m.CommitConfig, raw, tee)
}

// DeferBelow implements store.Store: a stage never writes.
func (m *Store) DeferBelow() int { return math.MaxInt }

// StageStream implements store.Store: the caller keeps the bytes.
func (m *Store) StageStream(_ context.Context, _ string, size int64) (store.StageWriter, error) {
	return store.StageStreamDirect(m.CommitConfig, size), nil
}

// DeleteStream implements store.Store.
func (m *Store) DeleteStream(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	if _, ok := m.streams[name]; !ok {
		return fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
	}
	delete(m.streams, name)
	delete(m.conv, name)
	return nil
}

// ListGenerations implements store.Store.
func (m *Store) ListGenerations(ctx context.Context, name string, before uint64, limit int) ([]store.GenerationInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	gens, ok := m.streams[name]
	if !ok {
		return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
	}
	infos := make([]store.GenerationInfo, len(gens))
	for i, g := range gens {
		infos[i] = store.InfoOf(g)
	}
	return store.Page(infos, before, limit), nil
}

// GetGeneration implements store.Store.
func (m *Store) GetGeneration(ctx context.Context, name string, gen uint64) (*config.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	gens, ok := m.streams[name]
	if !ok {
		return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
	}
	for _, g := range gens {
		if g.Generation == gen {
			return g, nil
		}
	}
	return nil, store.NotRetained(name, gen, gens[len(gens)-1].Generation, gens[0].Generation)
}

// GetStream implements store.Store.
func (m *Store) GetStream(ctx context.Context, name string) (*config.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	c := m.current(name)
	if c == nil {
		return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
	}
	return c, nil
}

// ListStreams implements store.Store, sorted by name.
func (m *Store) ListStreams(ctx context.Context) ([]*config.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]*config.Config, 0, len(m.streams))
	for _, k := range slices.Sorted(maps.Keys(m.streams)) {
		out = append(out, m.current(k))
	}
	return out, nil
}

// PutSink implements store.Store.
func (m *Store) PutSink(ctx context.Context, s *confighubv1.Sink) error {
	if s.GetName() == "" {
		return errors.New("memory store: sink name is empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	m.sinks[s.GetName()] = proto.Clone(s).(*confighubv1.Sink)
	return nil
}

// DeleteSink implements store.Store: it removes the spec and the applied
// record; ErrNotFound when neither exists.
func (m *Store) DeleteSink(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	_, hasSpec := m.sinks[name]
	_, hasApplied := m.applied[name]
	if !hasSpec && !hasApplied {
		return fmt.Errorf("sink %q: %w", name, store.ErrNotFound)
	}
	delete(m.sinks, name)
	delete(m.applied, name)
	return nil
}

// ListSinks implements store.Store, sorted by name.
func (m *Store) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]*confighubv1.Sink, 0, len(m.sinks))
	for _, k := range slices.Sorted(maps.Keys(m.sinks)) {
		out = append(out, proto.Clone(m.sinks[k]).(*confighubv1.Sink))
	}
	return out, nil
}

// RecordApplied implements store.Store.
func (m *Store) RecordApplied(ctx context.Context, a store.Applied) error {
	if a.Sink == "" {
		return errors.New("memory store: applied record without a sink name")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	m.applied[a.Sink] = a
	return nil
}

// ListApplied implements store.Store, sorted by sink name.
func (m *Store) ListApplied(ctx context.Context) ([]store.Applied, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]store.Applied, 0, len(m.applied))
	for _, k := range slices.Sorted(maps.Keys(m.applied)) {
		out = append(out, m.applied[k])
	}
	return out, nil
}

// RecordConverged implements store.Store.
func (m *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	m.conv[c.Stream] = c
	return nil
}

// ListConverged implements store.Store, sorted by stream name.
func (m *Store) ListConverged(ctx context.Context) ([]store.Converged, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]store.Converged, 0, len(m.conv))
	for _, k := range slices.Sorted(maps.Keys(m.conv)) {
		out = append(out, m.conv[k])
	}
	return out, nil
}

// Close makes every later call fail; it is idempotent.
func (m *Store) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// FingerprintKey implements store.Store.
func (m *Store) FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fpKey == nil {
		m.fpKey = append([]byte(nil), newKey...)
	}
	return append([]byte(nil), m.fpKey...), nil
}
