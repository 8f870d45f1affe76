package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

var _ store.Shared = (*Store)(nil)

const (
	DefaultPrefix    = "/confighub/" // unless WithPrefix
	defaultChunkSize = 1 << 20       // the largest chunk written in one request
	maxAttempts      = 16            // retries of a commit that lost a race, of a read compacted
	ownRevs          = 4096          // how many of this Store's write revisions it remembers
)

// The kinds of keys under the prefix (see the package doc).
const (
	kStreams   = "streams/"
	kHistory   = "history/"
	kConfigs   = "configs/"
	kSinks     = "sinks/"
	kApplied   = "applied/"
	kConverged = "converged/"
)

// Option configures New.
type Option func(*Store)

// WithPrefix sets the key prefix, adding a missing trailing slash.
func WithPrefix(p string) Option {
	return func(s *Store) { s.prefix = strings.TrimSuffix(p, "/") + "/" }
}

// WithRetention sets the retention (default store.DefaultRetention).
func WithRetention(r store.Retention) Option { return func(s *Store) { s.keep = r } }

// Store is a store.Store on etcd; it leaves the client open.
type Store struct {
	store.Direct
	cli       *clientv3.Client
	prefix    string
	chunkSize int
	clock     clockwork.Clock
	keep      store.Retention

	ctx    context.Context // cancelled by Close; parent of every watch
	cancel context.CancelFunc
	wg     sync.WaitGroup
	locks  store.Locks // one replica's commits of a stream queue here, not in etcd retries

	// writing is held shared by a write until its revision is in own, exclusively
	// by the watch before isOwn: it may see an event before the writer knows it.
	writing sync.RWMutex

	mu          sync.Mutex
	closed      bool
	own         map[int64]struct{}
	ownOrder    []int64
	listRev     int64           // revision of the last List* read
	listedSinks map[string]bool // what the last ListSinks returned, for a resync
}

// New returns a store using cli under the prefix.
func New(cli *clientv3.Client, opts ...Option) *Store {
	s := &Store{cli: cli, prefix: DefaultPrefix, chunkSize: defaultChunkSize, keep: store.DefaultRetention(), clock: clockwork.NewRealClock(), own: map[int64]struct{}{}, listedSinks: map[string]bool{}}
	s.Direct = store.Direct{Commit: s.CommitConfig}
	for _, o := range opts {
		o(s)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// key is the key of name of a kind; name "" gives the kind's prefix.
func (s *Store) key(kind, name string) string { return s.prefix + kind + name }

func genKey(gen uint64) string { return fmt.Sprintf("%020d", gen) }

// meta is a generation's record: store.Meta and where its chunks are.
type meta struct {
	store.Meta
	// Chunks is the key prefix of the config chunks, Count their number.
	Chunks string `json:"chunks"`
	Count  int    `json:"count"`
}

func decodeJSON[T any](key string, v []byte) (T, error) {
	var r T
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, key, err)
	}
	return r, nil
}

var errClosed = errors.New("etcd store: closed")

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// validName refuses a name that would nest under another's keys.
func validName(kind, name string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("etcd store: invalid %s name %q", kind, name)
	}
	return nil
}

// ownWrite records the revision write returns (0: none) as this Store's, for Watch to skip.
func (s *Store) ownWrite(write func() (int64, error)) error {
	s.writing.RLock()
	defer s.writing.RUnlock()
	rev, err := write()
	if err != nil || rev == 0 {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.own[rev]; !ok {
		s.own[rev] = struct{}{}
		s.ownOrder = append(s.ownOrder, rev)
		if len(s.ownOrder) > ownRevs {
			delete(s.own, s.ownOrder[0])
			s.ownOrder = s.ownOrder[1:]
		}
	}
	return nil
}

func (s *Store) isOwn(rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.own[rev]
	return ok
}

// CommitConfig implements store.Store: one transaction, conditional on the meta read.
func (s *Store) CommitConfig(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	if err := validName("stream", c.Stream); err != nil {
		return nil, false, err
	}
	defer s.locks.Lock(c.Stream)()
	for attempt := range maxAttempts {
		if err := s.check(ctx); err != nil {
			return nil, false, err
		}
		out, unchanged, retry, err := s.tryCommit(ctx, c, expected)
		if !retry {
			return out, unchanged, err
		}
		// Another replica won: a random wait parts two in lock step.
		if !s.sleep(ctx, time.Duration(mrand.Int64N(int64(attempt+1)*int64(5*time.Millisecond)))) {
			return nil, false, ctx.Err()
		}
	}
	return nil, false, fmt.Errorf("etcd store: stream %q: commit lost %d races in a row", c.Stream, maxAttempts)
}

func (s *Store) tryCommit(ctx context.Context, c *config.Config, expected uint64) (out *config.Config, unchanged, retry bool, err error) {
	mk := s.key(kStreams, c.Stream)
	resp, err := s.cli.Get(ctx, mk)
	if err != nil {
		return nil, false, false, fmt.Errorf("etcd store: read stream %q: %w", c.Stream, err)
	}
	var cur meta
	cmp := clientv3.Compare(clientv3.CreateRevision(mk), "=", 0)
	if len(resp.Kvs) == 1 {
		cmp = clientv3.Compare(clientv3.ModRevision(mk), "=", resp.Kvs[0].ModRevision)
		if cur, err = decodeJSON[meta](mk, resp.Kvs[0].Value); err != nil {
			return nil, false, false, err
		}
	}
	if expected > 0 && expected != cur.Generation {
		return nil, false, false, fmt.Errorf("stream %q is at generation %d, expected %d: %w", c.Stream, cur.Generation, expected, store.ErrConflict)
	}
	if len(resp.Kvs) == 1 && cur.Hash == c.Hash {
		out, err = cur.Config(c.Stream, c.Raw)
		return out, true, false, err
	}

	gen := cur.Generation + 1
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	prefix := s.key(kConfigs, c.Stream) + "/" + genKey(gen) + "-" + hex.EncodeToString(tok[:]) + "/"
	chunks := split(c.Raw, s.chunkSize)
	js, err := json.Marshal(meta{Meta: store.MetaOf(c, gen), Chunks: prefix, Count: len(chunks)})
	if err != nil {
		return nil, false, false, err
	}
	ops := []clientv3.Op{clientv3.OpPut(mk, string(js)), clientv3.OpPut(s.histKey(c.Stream, gen), string(js))}
	// One chunk goes in the transaction; more go before it, deleted (even
	// after ctx is done) unless it may have committed.
	keep := len(chunks) == 1
	defer func() {
		if !keep {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_, _ = s.cli.Delete(dctx, prefix, clientv3.WithPrefix())
		}
	}()
	for i, ch := range chunks {
		if keep {
			ops = append(ops, clientv3.OpPut(chunkKey(prefix, i), string(ch)))
		} else if _, err := s.cli.Put(ctx, chunkKey(prefix, i), string(ch)); err != nil {
			return nil, false, false, fmt.Errorf("etcd store: write config chunks of %q: %w", c.Stream, err)
		}
	}
	sweep, err := s.sweep(ctx, c.Stream, gen, len(c.Raw), prefix, resp.Header.Revision)
	if err != nil {
		return nil, false, errors.Is(err, rpctypes.ErrCompacted), err // compacted: read again
	}
	var tresp *clientv3.TxnResponse
	err = s.ownWrite(func() (int64, error) {
		tresp, err = s.cli.Txn(ctx).If(cmp).Then(append(ops, sweep...)...).Commit()
		if err != nil || !tresp.Succeeded {
			return 0, err
		}
		return tresp.Header.Revision, nil
	})
	switch {
	case err != nil:
		// Unknown outcome: the next commit's sweep deletes stale chunks.
		keep = true
		return nil, false, false, fmt.Errorf("etcd store: commit stream %q generation %d: %w", c.Stream, gen, err)
	case !tresp.Succeeded && expected > 0:
		return nil, false, false, fmt.Errorf("stream %q changed while committing, expected %d: %w", c.Stream, expected, store.ErrConflict)
	case !tresp.Succeeded:
		return nil, false, true, nil // another replica won: read again
	}
	keep = true
	return c.WithGeneration(gen), false, false, nil
}

func split(raw []byte, n int) [][]byte {
	var out [][]byte
	for len(raw) > n {
		out = append(out, raw[:n])
		raw = raw[n:]
	}
	return append(out, raw)
}

func chunkKey(prefix string, n int) string { return fmt.Sprintf("%s%06d", prefix, n) }

// readStream reads a generation's chunks at rev and assembles it.
func (s *Store) readStream(ctx context.Context, name string, metaVal []byte, rev int64) (*config.Config, error) {
	m, err := decodeJSON[meta](s.key(kStreams, name), metaVal)
	if err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, m.Chunks, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return nil, fmt.Errorf("etcd store: read config of %q at revision %d: %w", name, rev, err)
	}
	if len(resp.Kvs) != m.Count {
		return nil, fmt.Errorf("%w: stream %q generation %d has %d of %d config chunks", store.ErrCorrupt, name, m.Generation, len(resp.Kvs), m.Count)
	}
	raw := make([]byte, 0, m.Size)
	for _, kv := range resp.Kvs {
		raw = append(raw, kv.Value...)
	}
	if int64(len(raw)) != m.Size {
		return nil, fmt.Errorf("%w: stream %q generation %d: config is %d bytes, meta says %d", store.ErrCorrupt, name, m.Generation, len(raw), m.Size)
	}
	return m.Config(name, raw)
}

func (s *Store) GetStream(ctx context.Context, name string) (*config.Config, error) {
	return s.atMeta(ctx, name, func(meta []byte, rev int64) (*config.Config, error) {
		return s.readStream(ctx, name, meta, rev)
	})
}

// atMeta passes stream name's meta and its revision to read, again while compacted.
func (s *Store) atMeta(ctx context.Context, name string, read func(meta []byte, rev int64) (*config.Config, error)) (*config.Config, error) {
	return retryCompacted(s, ctx, fmt.Sprintf("stream %q", name), func() (*config.Config, error) {
		resp, err := s.cli.Get(ctx, s.key(kStreams, name))
		if err != nil {
			return nil, fmt.Errorf("etcd store: read stream %q: %w", name, err)
		}
		if len(resp.Kvs) == 0 {
			return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
		}
		return read(resp.Kvs[0].Value, resp.Header.Revision)
	})
}

// retryCompacted runs read until its reads are not compacted.
func retryCompacted[T any](s *Store, ctx context.Context, what string, read func() (T, error)) (v T, err error) {
	for range maxAttempts {
		if err = s.check(ctx); err != nil {
			return v, err
		}
		if v, err = read(); !errors.Is(err, rpctypes.ErrCompacted) {
			return v, err
		}
	}
	return v, fmt.Errorf("etcd store: %s: history compacted on every read", what)
}

// ListStreams implements store.Store, at one revision.
func (s *Store) ListStreams(ctx context.Context) ([]*config.Config, error) {
	return retryCompacted(s, ctx, "list streams", func() ([]*config.Config, error) {
		out, rev, err := s.listStreams(ctx)
		if err == nil {
			s.mu.Lock()
			s.listRev = max(s.listRev, rev)
			s.mu.Unlock()
		}
		return out, err
	})
}

func (s *Store) listStreams(ctx context.Context) ([]*config.Config, int64, error) {
	return list(s, ctx, kStreams, func(name string, v []byte, rev int64) (*config.Config, error) {
		return s.readStream(ctx, name, v, rev)
	})
}

func (s *Store) PutSink(ctx context.Context, sp *confighubv1.Sink) error {
	if err := validName("sink", sp.GetName()); err != nil {
		return err
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(sp)
	return s.put(ctx, kSinks, sp.GetName(), raw, err)
}

// DeleteSink implements store.Store in one transaction.
func (s *Store) DeleteSink(ctx context.Context, name string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.deleteAll(ctx, "sink", name, 2, clientv3.OpDelete(s.key(kSinks, name)), clientv3.OpDelete(s.key(kApplied, name)))
}

// deleteAll runs deletions in one transaction: ErrNotFound when the first found did nothing.
func (s *Store) deleteAll(ctx context.Context, kind, name string, found int, ops ...clientv3.Op) error {
	return s.ownWrite(func() (int64, error) {
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return 0, fmt.Errorf("etcd store: delete %s %q: %w", kind, name, err)
		}
		for _, r := range resp.Responses[:found] {
			if r.GetResponseDeleteRange().GetDeleted() > 0 {
				return resp.Header.Revision, nil
			}
		}
		return 0, fmt.Errorf("%s %q: %w", kind, name, store.ErrNotFound)
	})
}

func (s *Store) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	names := map[string]bool{}
	out, rev, err := list(s, ctx, kSinks, func(name string, v []byte, _ int64) (*confighubv1.Sink, error) {
		names[name] = true
		return decodeSink([]byte(s.key(kSinks, name)), v)
	})
	if err == nil {
		s.mu.Lock()
		s.listRev, s.listedSinks = max(s.listRev, rev), names
		s.mu.Unlock()
	}
	return out, err
}

func decodeSink(key, v []byte) (*confighubv1.Sink, error) {
	sp := &confighubv1.Sink{}
	if err := proto.Unmarshal(v, sp); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, key, err)
	}
	return sp, nil
}

// list reads every record of a kind and the revision read at.
func list[T any](s *Store, ctx context.Context, kind string, decode func(name string, v []byte, rev int64) (T, error)) ([]T, int64, error) {
	if err := s.check(ctx); err != nil {
		return nil, 0, err
	}
	resp, err := s.cli.Get(ctx, s.key(kind, ""), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("etcd store: list %s: %w", strings.TrimSuffix(kind, "/"), err)
	}
	out := make([]T, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		r, err := decode(strings.TrimPrefix(string(kv.Key), s.key(kind, "")), kv.Value, resp.Header.Revision)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, resp.Header.Revision, nil
}

// put stores raw (encoded with error err) under name of a kind.
func (s *Store) put(ctx context.Context, kind, name string, raw []byte, err error) error {
	if err != nil {
		return fmt.Errorf("etcd store: encode %s%s: %w", kind, name, err)
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := s.ownWrite(func() (int64, error) {
		resp, err := s.cli.Put(ctx, s.key(kind, name), string(raw))
		if err != nil || kind != kSinks {
			return 0, err
		}
		return resp.Header.Revision, nil
	}); err != nil {
		return fmt.Errorf("etcd store: put %s%s: %w", kind, name, err)
	}
	return nil
}

// listJSON lists the JSON records of a kind; named sets a record's name.
func listJSON[T any](s *Store, ctx context.Context, kind string, named func(*T, string)) ([]T, error) {
	out, _, err := list(s, ctx, kind, func(name string, v []byte, _ int64) (T, error) {
		r, err := decodeJSON[T](s.key(kind, name), v)
		named(&r, name)
		return r, err
	})
	return out, err
}

func (s *Store) RecordApplied(ctx context.Context, a store.Applied) error {
	if err := validName("sink", a.Sink); err != nil {
		return err
	}
	raw, err := json.Marshal(a)
	return s.put(ctx, kApplied, a.Sink, raw, err)
}

func (s *Store) ListApplied(ctx context.Context) ([]store.Applied, error) {
	return listJSON(s, ctx, kApplied, func(a *store.Applied, name string) { a.Sink = name })
}

// RecordConverged implements store.Store; every replica then shows it.
func (s *Store) RecordConverged(ctx context.Context, c store.Converged) error {
	if err := validName("stream", c.Stream); err != nil {
		return err
	}
	raw, err := json.Marshal(c)
	return s.put(ctx, kConverged, c.Stream, raw, err)
}

func (s *Store) ListConverged(ctx context.Context) ([]store.Converged, error) {
	return listJSON(s, ctx, kConverged, func(c *store.Converged, name string) { c.Stream = name })
}

// FingerprintKey implements store.Store with a create-if-absent transaction.
func (s *Store) FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	key := s.prefix + "fingerprint-key"
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(newKey))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("etcd store: fingerprint key: %w", err)
	}
	if resp.Succeeded {
		return append([]byte(nil), newKey...), nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return nil, fmt.Errorf("etcd store: fingerprint key %s vanished", key)
	}
	return kvs[0].Value, nil
}

// Close stops every watch and waits for them; it is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}
