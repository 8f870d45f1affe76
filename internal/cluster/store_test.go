package cluster

import (
	"context"
	"io"
	"sync"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/memory"
)

// shared is the store several replicas share (etcd, or sharedStore).
type shared = store.Shared

// sharedStore is the memory store with a Watch, standing in for the etcd
// store that several replicas share.
type sharedStore struct {
	*memory.Store
	mu       sync.Mutex
	watchers map[chan store.Event]struct{}
}

var _ store.Shared = (*sharedStore)(nil)

func newSharedStore() *sharedStore {
	return &sharedStore{Store: memory.New(), watchers: map[chan store.Event]struct{}{}}
}

func (s *sharedStore) Watch(ctx context.Context) <-chan store.Event {
	ch := make(chan store.Event, 1024)
	s.mu.Lock()
	s.watchers[ch] = struct{}{}
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.watchers, ch)
		s.mu.Unlock()
		close(ch)
	})
	return ch
}

func (s *sharedStore) emit(ev store.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.watchers {
		ch <- ev
	}
}

func (s *sharedStore) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	out, unchanged, err := s.Store.CommitConfig(ctx, c, expected)
	if err == nil && !unchanged {
		s.emit(store.Event{Config: out})
	}
	return out, unchanged, err
}

// StageConfig and StageStream commit through CommitConfig, which emits.
func (s *sharedStore) StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (store.Staged, error) {
	return store.Direct{Commit: s.CommitConfig}.StageConfig(ctx, stream, raw, tee)
}

func (s *sharedStore) StageStream(ctx context.Context, stream string, size int64) (store.StageWriter, error) {
	return store.Direct{Commit: s.CommitConfig}.StageStream(ctx, stream, size)
}

func (s *sharedStore) PutSink(ctx context.Context, sk *confighubv1.Sink) error {
	err := s.Store.PutSink(ctx, sk)
	if err == nil {
		s.emit(store.Event{SinkPut: sk})
	}
	return err
}

func (s *sharedStore) DeleteSink(ctx context.Context, name string) error {
	err := s.Store.DeleteSink(ctx, name)
	if err == nil {
		s.emit(store.Event{SinkDeleted: name})
	}
	return err
}
