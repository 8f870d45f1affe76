package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// WithRetention sets how many generations of each stream keep their bytes
// (default store.DefaultRetention). etcd holds them besides its history
// until compaction: size the --quota-backend-bytes for it.
func WithRetention(r store.Retention) Option { return func(s *Store) { s.keep = r } }

func (s *Store) histBase(name string) string { return s.prefix + "history/" + name + "/" }
func (s *Store) histKey(name string, gen uint64) string {
	return s.histBase(name) + genKey(gen)
}

// sweep returns the deletions a commit of generation gen (size bytes, its
// chunks under prefix) makes, from the history read at rev: the chunks and
// meta of the generations that fall out of the retention, and every other
// attempt at gen (such attempts can no longer commit). Attempts at newer
// generations, staged by other replicas, stay.
func (s *Store) sweep(ctx context.Context, name string, gen uint64, size int, prefix string, rev int64) ([]clientv3.Op, error) {
	base := s.chunkBase(name)
	resp, err := s.cli.Get(ctx, s.histBase(name), clientv3.WithPrefix(), clientv3.WithRev(rev),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		return nil, fmt.Errorf("etcd store: read the history of %q: %w", name, err)
	}
	sizes := []int64{int64(size)}
	gens := []uint64{gen}
	for _, kv := range resp.Kvs {
		m, err := decodeMeta(string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		sizes, gens = append(sizes, int64(m.Size)), append(gens, m.Generation)
	}
	var ops []clientv3.Op
	if keep := s.keep.Keep(sizes); keep < len(gens) {
		oldest := gens[keep-1]
		ops = append(ops,
			clientv3.OpDelete(base, clientv3.WithRange(base+genKey(oldest))),
			clientv3.OpDelete(s.histBase(name), clientv3.WithRange(s.histKey(name, oldest))))
	}
	return append(ops,
		clientv3.OpDelete(base+genKey(gen), clientv3.WithRange(prefix)),
		clientv3.OpDelete(clientv3.GetPrefixRangeEnd(prefix), clientv3.WithRange(base+genKey(gen+1)))), nil
}

// GetGeneration implements store.Store: the stream's generation gen, read
// at one revision with its meta, while it is retained.
func (s *Store) GetGeneration(ctx context.Context, name string, gen uint64) (*config.Config, error) {
	return s.atMeta(ctx, name, func(metaVal []byte, rev int64) (*config.Config, error) {
		cur, err := decodeMeta(s.metaKey(name), metaVal)
		if err != nil {
			return nil, err
		}
		if gen != cur.Generation {
			h, err := s.cli.Get(ctx, s.histKey(name, gen), clientv3.WithRev(rev))
			if errors.Is(err, rpctypes.ErrCompacted) {
				return nil, err // atMeta reads again
			}
			if err != nil {
				return nil, fmt.Errorf("etcd store: read generation %d of %q: %w", gen, name, err)
			}
			if len(h.Kvs) == 0 {
				oldest, err := s.oldest(ctx, name, rev)
				if err != nil {
					return nil, err
				}
				return nil, store.NotRetained(name, gen, min(oldest, cur.Generation), cur.Generation)
			}
			metaVal = h.Kvs[0].Value
		}
		return s.readStream(ctx, name, metaVal, rev)
	})
}

// oldest is the oldest retained generation of stream name at rev.
func (s *Store) oldest(ctx context.Context, name string, rev int64) (uint64, error) {
	resp, err := s.cli.Get(ctx, s.histBase(name), clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("etcd store: read the history of %q: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return math.MaxUint64, nil
	}
	g, err := strconv.ParseUint(strings.TrimPrefix(string(resp.Kvs[0].Key), s.histBase(name)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, resp.Kvs[0].Key, err)
	}
	return g, nil
}

// ListGenerations implements store.Store, from the history metas read at
// one revision with the stream's meta.
func (s *Store) ListGenerations(ctx context.Context, name string, before uint64, limit int) ([]store.GenerationInfo, error) {
	var out []store.GenerationInfo
	_, err := s.atMeta(ctx, name, func(_ []byte, rev int64) (*config.Config, error) {
		end := clientv3.GetPrefixRangeEnd(s.histBase(name))
		if before > 0 {
			end = s.histKey(name, before)
		}
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}
		if limit > 0 {
			opts = append(opts, clientv3.WithLimit(int64(limit)))
		}
		resp, err := s.cli.Get(ctx, s.histBase(name), opts...)
		if err != nil {
			return nil, err
		}
		out = make([]store.GenerationInfo, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			m, err := decodeMeta(string(kv.Key), kv.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, store.GenerationInfo{Stream: name, Generation: m.Generation, Hash: m.Hash, Size: int64(m.Size),
				Labels: m.Labels, AcceptTime: m.AcceptTime, Origin: m.Origin.Origin()})
		}
		return nil, nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCorrupt) {
		err = fmt.Errorf("etcd store: list the generations of %q: %w", name, err)
	}
	return out, err
}

// DeleteStream implements store.Store: one transaction deletes the meta,
// the history, every chunk and the convergence record.
func (s *Store) DeleteStream(ctx context.Context, name string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("etcd store: invalid stream name %q", name)
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	mu, _ := s.commitMu.LoadOrStore(name, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	s.writing.RLock()
	defer s.writing.RUnlock()
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpDelete(s.metaKey(name)),
		clientv3.OpDelete(s.histBase(name), clientv3.WithPrefix()),
		clientv3.OpDelete(s.chunkBase(name), clientv3.WithPrefix()),
		clientv3.OpDelete(s.convergedKey(name))).Commit()
	if err != nil {
		return fmt.Errorf("etcd store: delete stream %q: %w", name, err)
	}
	if resp.Responses[0].GetResponseDeleteRange().GetDeleted() == 0 {
		return fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
	}
	s.recordOwn(resp.Header.Revision)
	return nil
}

// StageConfig implements store.Store: the commit writes the bytes.
func (s *Store) StageConfig(_ context.Context, _ string, raw []byte, tee io.Writer) (store.Staged, error) {
	return store.StageDirect(s.CommitConfig, raw, tee)
}

// DeferBelow implements store.Store: a stage never writes.
func (s *Store) DeferBelow() int { return math.MaxInt }

// StageStream implements store.Store: the caller keeps the bytes, the
// commit writes them.
func (s *Store) StageStream(_ context.Context, _ string, size int64) (store.StageWriter, error) {
	return store.StageStreamDirect(s.CommitConfig, size), nil
}
