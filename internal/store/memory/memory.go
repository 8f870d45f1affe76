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

var (
	_ store.Store          = (*Store)(nil)
	_ store.ConvergedStore = (*Store)(nil)
)

// Store keeps streams, sinks and applied records in maps under one mutex.
// A committed config is kept as it is (configs are immutable): its bytes
// are held once, by the caller and the store.
type Store struct {
	mu      sync.Mutex
	closed  bool
	streams map[string]*config.Config
	sinks   map[string]*confighubv1.Sink
	applied map[string]store.Applied
	conv    map[string]store.Converged
	fpKey   []byte
}

// New returns an empty store.
func New() *Store {
	return &Store{
		streams: map[string]*config.Config{},
		sinks:   map[string]*confighubv1.Sink{},
		applied: map[string]store.Applied{},
		conv:    map[string]store.Converged{},
	}
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
	cur := m.streams[c.Stream]
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
	m.streams[c.Stream] = stored
	return stored, false, nil
}

// GetStream implements store.Store.
func (m *Store) GetStream(ctx context.Context, name string) (*config.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	c, ok := m.streams[name]
	if !ok {
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
		out = append(out, m.streams[k])
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

// RecordConverged implements store.ConvergedStore.
func (m *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	m.conv[c.Stream] = c
	return nil
}

// ListConverged implements store.ConvergedStore, sorted by stream name.
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

var _ store.FingerprintKeyer = (*Store)(nil)

// FingerprintKey implements store.FingerprintKeyer.
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
