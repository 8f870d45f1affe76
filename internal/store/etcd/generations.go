package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

var _ store.GenerationReader = (*Store)(nil)

// DefaultKeepGenerations is how many generations of each stream the store
// keeps the bytes of: the current one and the ones before it. A sink's
// failed configuration is read back by generation from any replica
// (GetConfig with failed), so a generation a sink failed stays readable
// while it is one of these.
const DefaultKeepGenerations = 8

// WithKeepGenerations sets how many generations of each stream keep their
// bytes (default 8, at least 1: the current one). etcd holds that many
// configs per stream besides its history until compaction: size the
// --quota-backend-bytes for it.
func WithKeepGenerations(n int) Option { return func(s *Store) { s.keep = max(n, 1) } }

func (s *Store) histBase(name string) string { return s.prefix + "history/" + name + "/" }
func (s *Store) histKey(name string, gen uint64) string {
	return s.histBase(name) + genKey(gen)
}

// sweep returns the deletions a commit of generation gen (its chunks under
// prefix) makes: the chunks and meta of generations older than the kept
// ones, and every other attempt at gen (such attempts can no longer
// commit). Attempts at newer generations, staged by other replicas, stay.
func (s *Store) sweep(name string, gen uint64, prefix string) []clientv3.Op {
	base := s.chunkBase(name)
	var ops []clientv3.Op
	if gen > uint64(s.keep) {
		oldest := gen - uint64(s.keep) + 1
		ops = append(ops,
			clientv3.OpDelete(base, clientv3.WithRange(base+genKey(oldest))),
			clientv3.OpDelete(s.histBase(name), clientv3.WithRange(s.histKey(name, oldest))))
	}
	return append(ops,
		clientv3.OpDelete(base+genKey(gen), clientv3.WithRange(prefix)),
		clientv3.OpDelete(clientv3.GetPrefixRangeEnd(prefix), clientv3.WithRange(base+genKey(gen+1))))
}

// GetGeneration implements store.GenerationReader: the stream's generation
// gen, while it is one of the kept ones; store.ErrNotFound otherwise.
func (s *Store) GetGeneration(ctx context.Context, name string, gen uint64) (*config.Config, error) {
	return s.atMeta(ctx, name, func(metaVal []byte, rev int64) (*config.Config, error) {
		cur, err := decodeMeta(s.metaKey(name), metaVal)
		if err != nil {
			return nil, err
		}
		switch {
		case gen > cur.Generation || gen == 0:
			return nil, fmt.Errorf("stream %q has no generation %d (current %d): %w", name, gen, cur.Generation, store.ErrNotFound)
		case gen < cur.Generation:
			h, err := s.cli.Get(ctx, s.histKey(name, gen), clientv3.WithRev(rev))
			if errors.Is(err, rpctypes.ErrCompacted) {
				return nil, err // atMeta reads again
			}
			if err != nil {
				return nil, fmt.Errorf("etcd store: read generation %d of %q: %w", gen, name, err)
			}
			if len(h.Kvs) == 0 {
				return nil, fmt.Errorf("generation %d of stream %q is no longer kept (the last %d are, current %d): %w", gen, name, s.keep, cur.Generation, store.ErrNotFound)
			}
			metaVal = h.Kvs[0].Value
		}
		return s.readStream(ctx, name, metaVal, rev)
	})
}
