package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

func (s *Store) histKey(name string, gen uint64) string {
	return s.key(kHistory, name) + "/" + genKey(gen)
}

// sweep returns the deletions of a commit of gen (size bytes, chunks under
// prefix), from the history at rev: the generations past the retention and
// every other attempt at gen; other replicas' attempts at newer ones stay.
func (s *Store) sweep(ctx context.Context, name string, gen uint64, size int, prefix string, rev int64) ([]clientv3.Op, error) {
	base, hist := s.key(kConfigs, name)+"/", s.key(kHistory, name)+"/"
	resp, err := s.cli.Get(ctx, hist, clientv3.WithPrefix(), clientv3.WithRev(rev),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		return nil, fmt.Errorf("etcd store: read the history of %q: %w", name, err)
	}
	sizes, gens := []int64{int64(size)}, []uint64{gen}
	for _, kv := range resp.Kvs {
		m, err := decodeJSON[meta](string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		sizes, gens = append(sizes, m.Size), append(gens, m.Generation)
	}
	var ops []clientv3.Op
	if keep := s.keep.Keep(sizes); keep < len(gens) {
		oldest := gens[keep-1]
		ops = append(ops,
			clientv3.OpDelete(base, clientv3.WithRange(base+genKey(oldest))),
			clientv3.OpDelete(hist, clientv3.WithRange(s.histKey(name, oldest))))
	}
	return append(ops,
		clientv3.OpDelete(base+genKey(gen), clientv3.WithRange(prefix)),
		clientv3.OpDelete(clientv3.GetPrefixRangeEnd(prefix), clientv3.WithRange(base+genKey(gen+1)))), nil
}

// GetGeneration implements store.Store, at one revision with the meta.
func (s *Store) GetGeneration(ctx context.Context, name string, gen uint64) (*config.Config, error) {
	return s.atMeta(ctx, name, func(metaVal []byte, rev int64) (*config.Config, error) {
		cur, err := decodeJSON[meta](s.key(kStreams, name), metaVal)
		if err != nil || gen == cur.Generation {
			return s.readStream(ctx, name, metaVal, rev)
		}
		h, err := s.cli.Get(ctx, s.histKey(name, gen), clientv3.WithRev(rev))
		switch {
		case errors.Is(err, rpctypes.ErrCompacted):
			return nil, err // atMeta reads again
		case err != nil:
			return nil, fmt.Errorf("etcd store: read generation %d of %q: %w", gen, name, err)
		case len(h.Kvs) > 0:
			return s.readStream(ctx, name, h.Kvs[0].Value, rev)
		}
		hist := s.key(kHistory, name) + "/"
		first, err := s.cli.Get(ctx, hist, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			return nil, fmt.Errorf("etcd store: read the history of %q: %w", name, err)
		}
		oldest := cur.Generation
		if len(first.Kvs) > 0 {
			g, err := strconv.ParseUint(strings.TrimPrefix(string(first.Kvs[0].Key), hist), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, first.Kvs[0].Key, err)
			}
			oldest = min(oldest, g)
		}
		return nil, store.NotRetained(name, gen, oldest, cur.Generation)
	})
}

// ListGenerations implements store.Store, at one revision with the meta.
func (s *Store) ListGenerations(ctx context.Context, name string, before uint64, limit int) ([]store.GenerationInfo, error) {
	var out []store.GenerationInfo
	_, err := s.atMeta(ctx, name, func(_ []byte, rev int64) (*config.Config, error) {
		hist := s.key(kHistory, name) + "/"
		end := clientv3.GetPrefixRangeEnd(hist)
		if before > 0 {
			end = s.histKey(name, before)
		}
		resp, err := s.cli.Get(ctx, hist, clientv3.WithRange(end), clientv3.WithRev(rev),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(int64(max(limit, 0))))
		if err != nil {
			return nil, err
		}
		out = make([]store.GenerationInfo, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			m, err := decodeJSON[meta](string(kv.Key), kv.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, m.Info(name))
		}
		return nil, nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCorrupt) {
		err = fmt.Errorf("etcd store: list the generations of %q: %w", name, err)
	}
	return out, err
}

// DeleteStream implements store.Store in one transaction.
func (s *Store) DeleteStream(ctx context.Context, name string) error {
	if err := validName("stream", name); err != nil {
		return err
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	defer s.locks.Lock(name)()
	return s.deleteAll(ctx, "stream", name, 1,
		clientv3.OpDelete(s.key(kStreams, name)),
		clientv3.OpDelete(s.key(kHistory, name)+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(s.key(kConfigs, name)+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(s.key(kConverged, name)))
}
