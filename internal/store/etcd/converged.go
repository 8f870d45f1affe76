package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/confighub/confighub/internal/store"
)

func (s *Store) convergedKey(stream string) string { return s.prefix + "converged/" + stream }
func (s *Store) convergedPrefix() string           { return s.prefix + "converged/" }

type convergedRecord struct {
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
}

// RecordConverged implements store.Store: the stream's leader
// records each convergence, so every replica, a restarted one included,
// shows the time it was observed and none observes it again.
func (s *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	if c.Stream == "" || strings.Contains(c.Stream, "/") {
		return fmt.Errorf("etcd store: invalid stream name %q", c.Stream)
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	raw, err := json.Marshal(convergedRecord{Generation: c.Generation, Time: c.Time})
	if err != nil {
		return err
	}
	if _, err := s.cli.Put(ctx, s.convergedKey(c.Stream), string(raw)); err != nil {
		return fmt.Errorf("etcd store: record convergence of %q: %w", c.Stream, err)
	}
	return nil
}

// ListConverged implements store.Store, sorted by stream name.
func (s *Store) ListConverged(ctx context.Context) ([]store.Converged, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.convergedPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd store: list convergences: %w", err)
	}
	out := make([]store.Converged, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r convergedRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, kv.Key, err)
		}
		out = append(out, store.Converged{Stream: strings.TrimPrefix(string(kv.Key), s.convergedPrefix()), Generation: r.Generation, Time: r.Time})
	}
	return out, nil
}
