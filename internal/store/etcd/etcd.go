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

// DefaultPrefix is where the store keeps its keys unless WithPrefix says.
const DefaultPrefix = "/confighub/"

// DefaultChunkSize is the largest config chunk written in one request.
const DefaultChunkSize = 1 << 20

const (
	// maxAttempts bounds the retries of a commit that lost a race with
	// another replica (without expected generation).
	maxAttempts = 16
	// ownRevs bounds the memory of this Store's own write revisions.
	ownRevs = 4096
	// defaultStageParallel bounds the concurrent chunk writes of one commit.
	defaultStageParallel = 1
)

// Option configures New.
type Option func(*Store)

// WithPrefix sets the key prefix (default "/confighub/"); several hubs can
// share an etcd cluster with different prefixes. A missing trailing slash
// is added.
func WithPrefix(p string) Option {
	return func(s *Store) {
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		s.prefix = p
	}
}

// WithChunkSize sets the size of config chunks (default 1 MiB). It must
// stay below the etcd server's --max-request-bytes.
func WithChunkSize(n int) Option { return func(s *Store) { s.chunkSize = max(n, 1) } }

// WithStageParallel bounds the concurrent chunk writes of one large
// commit (default 1: on the embedded single-member etcd of the benchmark,
// sequential writes were faster than 4 in flight; over a network with a
// real round-trip time more may pay).
func WithStageParallel(n int) Option { return func(s *Store) { s.stageParallel = max(n, 1) } }

// WithClock sets the clock used for the watch retry backoff.
func WithClock(c clockwork.Clock) Option { return func(s *Store) { s.clock = c } }

// Store is a store.Store on etcd. It does not own the client: Close stops
// the watches but leaves the client open.
type Store struct {
	cli       *clientv3.Client
	prefix    string
	chunkSize int
	clock     clockwork.Clock

	stageParallel int
	keep          store.Retention // generations whose bytes are kept per stream

	ctx    context.Context // cancelled by Close; parent of every watch
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// commitMu serialises this Store's commits per stream: contention
	// between goroutines of one replica is settled here, not by etcd
	// transaction retries.
	commitMu sync.Map // stream name -> *sync.Mutex

	// writing is held (shared) by a write from its request until its
	// revision is in own, and (exclusively) by the watch before it asks
	// isOwn: the watch may see a write's event before the writer has
	// its answer, and must not take it for another replica's.
	writing sync.RWMutex

	mu       sync.Mutex
	closed   bool
	own      map[int64]struct{}
	ownOrder []int64
	listRev  int64 // revision of the last List* read
	// listedSinks are the sink names the last ListSinks returned: what a
	// watcher's reader knows, so a resync can report the ones deleted
	// during a compacted gap.
	listedSinks map[string]bool
}

// New returns a store using cli under the prefix.
func New(cli *clientv3.Client, opts ...Option) *Store {
	s := &Store{cli: cli, prefix: DefaultPrefix, chunkSize: DefaultChunkSize, stageParallel: defaultStageParallel, keep: store.DefaultRetention(), clock: clockwork.NewRealClock(), own: map[int64]struct{}{}}
	for _, o := range opts {
		o(s)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

func (s *Store) metaKey(name string) string   { return s.prefix + "streams/" + name }
func (s *Store) metaPrefix() string           { return s.prefix + "streams/" }
func (s *Store) chunkBase(name string) string { return s.prefix + "configs/" + name + "/" }
func (s *Store) sinkKey(name string) string   { return s.prefix + "sinks/" + name }
func (s *Store) sinkPrefix() string           { return s.prefix + "sinks/" }
func (s *Store) appliedKey(name string) string {
	return s.prefix + "applied/" + name
}
func (s *Store) appliedPrefix() string { return s.prefix + "applied/" }

func genKey(gen uint64) string { return fmt.Sprintf("%020d", gen) }

type streamMeta struct {
	Generation uint64              `json:"generation"`
	Hash       string              `json:"hash"`
	Format     string              `json:"format"`
	Size       int                 `json:"size"`
	Labels     map[string]string   `json:"labels,omitempty"`
	AcceptTime time.Time           `json:"accept_time"`
	Origin     *store.OriginRecord `json:"origin,omitempty"`
	// Chunks is the key prefix of the config chunks, Count their number.
	Chunks string `json:"chunks"`
	Count  int    `json:"count"`
}

type appliedRecord struct {
	Stream     string    `json:"stream"`
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Time       time.Time `json:"time"`
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

func (s *Store) recordOwn(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.own[rev]; ok {
		return
	}
	s.own[rev] = struct{}{}
	s.ownOrder = append(s.ownOrder, rev)
	if len(s.ownOrder) > ownRevs {
		delete(s.own, s.ownOrder[0])
		s.ownOrder = s.ownOrder[1:]
	}
}

func (s *Store) isOwn(rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.own[rev]
	return ok
}

func (s *Store) noteListRev(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listRev = max(s.listRev, rev)
}

func decodeMeta(key string, v []byte) (streamMeta, error) {
	var m streamMeta
	if err := json.Unmarshal(v, &m); err != nil {
		return m, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, key, err)
	}
	return m, nil
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func split(raw []byte, n int) [][]byte {
	var out [][]byte
	for len(raw) > n {
		out = append(out, raw[:n])
		raw = raw[n:]
	}
	return append(out, raw)
}

// CommitConfig implements store.Store with one etcd transaction that
// compares the stream's meta key with what was read (see the package doc).
// The returned config shares st.Raw.
func (s *Store) CommitConfig(ctx context.Context, st *config.Config, expected uint64) (*config.Config, bool, error) {
	if st.Stream == "" || strings.Contains(st.Stream, "/") {
		return nil, false, fmt.Errorf("etcd store: invalid stream name %q", st.Stream)
	}
	mu, _ := s.commitMu.LoadOrStore(st.Stream, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	for attempt := range maxAttempts {
		if err := s.check(ctx); err != nil {
			return nil, false, err
		}
		out, unchanged, retry, err := s.tryCommit(ctx, st, expected)
		if !retry {
			return out, unchanged, err
		}
		// Another replica won: wait a little, at random, so that two
		// replicas in lock step part.
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-s.clock.After(time.Duration(mrand.Int64N(int64(attempt+1) * int64(5*time.Millisecond)))):
		}
	}
	return nil, false, fmt.Errorf("etcd store: stream %q: commit lost %d races in a row", st.Stream, maxAttempts)
}

func (s *Store) tryCommit(ctx context.Context, st *config.Config, expected uint64) (out *config.Config, unchanged, retry bool, err error) {
	mk := s.metaKey(st.Stream)
	resp, err := s.cli.Get(ctx, mk)
	if err != nil {
		return out, false, false, fmt.Errorf("etcd store: read stream %q: %w", st.Stream, err)
	}
	var (
		cur    streamMeta
		modRev int64
	)
	if len(resp.Kvs) == 1 {
		modRev = resp.Kvs[0].ModRevision
		if cur, err = decodeMeta(mk, resp.Kvs[0].Value); err != nil {
			return out, false, false, err
		}
	}
	if expected > 0 && expected != cur.Generation {
		return out, false, false, fmt.Errorf("stream %q is at generation %d, expected %d: %w", st.Stream, cur.Generation, expected, store.ErrConflict)
	}
	if modRev != 0 && cur.Hash == st.Hash {
		f, err := config.ParseFormat(cur.Format)
		if err != nil {
			return out, false, false, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, mk, err)
		}
		return config.New(st.Stream, cur.Generation, cur.Hash, f, st.Raw, nil, cur.Labels, cur.AcceptTime).WithOrigin(cur.Origin.Origin()), true, false, nil
	}

	gen := cur.Generation + 1
	base := s.chunkBase(st.Stream)
	prefix := base + genKey(gen) + "-" + token() + "/"
	chunks := split(st.Raw, s.chunkSize)
	m := streamMeta{Generation: gen, Hash: st.Hash, Format: st.Format.String(), Size: len(st.Raw),
		Labels: st.Labels, AcceptTime: st.AcceptTime, Origin: store.RecordOf(st.Origin), Chunks: prefix, Count: len(chunks)}
	meta, err := json.Marshal(m)
	if err != nil {
		return out, false, false, err
	}

	ops := []clientv3.Op{clientv3.OpPut(mk, string(meta)), clientv3.OpPut(s.histKey(st.Stream, gen), string(meta))}
	staged := len(chunks) > 1
	if staged {
		if err := s.stage(ctx, prefix, chunks); err != nil {
			s.unstage(ctx, prefix)
			return out, false, false, fmt.Errorf("etcd store: write config chunks of %q: %w", st.Stream, err)
		}
	} else {
		ops = append(ops, clientv3.OpPut(chunkKey(prefix, 0), string(chunks[0])))
	}
	sweep, err := s.sweep(ctx, st.Stream, gen, len(st.Raw), prefix, resp.Header.Revision)
	if err != nil {
		if staged {
			s.unstage(ctx, prefix)
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			return out, false, true, nil // read again
		}
		return out, false, false, err
	}
	ops = append(ops, sweep...)
	var cmp clientv3.Cmp
	if modRev == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(mk), "=", 0)
	} else {
		cmp = clientv3.Compare(clientv3.ModRevision(mk), "=", modRev)
	}
	s.writing.RLock()
	tresp, err := s.cli.Txn(ctx).If(cmp).Then(ops...).Commit()
	if err == nil && tresp.Succeeded {
		s.recordOwn(tresp.Header.Revision)
	}
	s.writing.RUnlock()
	if err != nil {
		// The outcome is unknown: the staged chunks may now be current, so
		// they are left for the next commit's sweep.
		return out, false, false, fmt.Errorf("etcd store: commit stream %q generation %d: %w", st.Stream, gen, err)
	}
	if !tresp.Succeeded {
		if staged {
			s.unstage(ctx, prefix)
		}
		if expected > 0 {
			return out, false, false, fmt.Errorf("stream %q changed while committing, expected %d: %w", st.Stream, expected, store.ErrConflict)
		}
		return out, false, true, nil
	}
	return st.WithGeneration(gen), false, false, nil
}

func chunkKey(prefix string, n int) string { return fmt.Sprintf("%s%06d", prefix, n) }

// stage writes the chunks, s.stageParallel at a time (etcd batches
// concurrent proposals into fewer WAL fsyncs). It returns the first error.
func (s *Store) stage(ctx context.Context, prefix string, chunks [][]byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, s.stageParallel)
	)
	for i, c := range chunks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.cli.Put(ctx, chunkKey(prefix, i), string(c)); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// unstage deletes the chunks of an attempt that did not commit, even when
// ctx is done.
func (s *Store) unstage(ctx context.Context, prefix string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = s.cli.Delete(dctx, prefix, clientv3.WithPrefix())
}

// readStream reads a stream's chunks at rev and assembles it.
func (s *Store) readStream(ctx context.Context, name string, metaVal []byte, rev int64) (*config.Config, error) {
	mk := s.metaKey(name)
	m, err := decodeMeta(mk, metaVal)
	if err != nil {
		return nil, err
	}
	f, err := config.ParseFormat(m.Format)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, mk, err)
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
	if len(raw) != m.Size {
		return nil, fmt.Errorf("%w: stream %q generation %d: config is %d bytes, meta says %d", store.ErrCorrupt, name, m.Generation, len(raw), m.Size)
	}
	return config.New(name, m.Generation, m.Hash, f, raw, nil, m.Labels, m.AcceptTime).WithOrigin(m.Origin.Origin()), nil
}

// GetStream implements store.Store.
func (s *Store) GetStream(ctx context.Context, name string) (*config.Config, error) {
	return s.atMeta(ctx, name, func(meta []byte, rev int64) (*config.Config, error) {
		return s.readStream(ctx, name, meta, rev)
	})
}

// atMeta reads stream name's meta and passes it to read with the revision
// it was read at; when read's own reads at that revision find it compacted
// (rpctypes.ErrCompacted), it reads the meta again, up to maxAttempts.
func (s *Store) atMeta(ctx context.Context, name string, read func(meta []byte, rev int64) (*config.Config, error)) (*config.Config, error) {
	for range maxAttempts {
		if err := s.check(ctx); err != nil {
			return nil, err
		}
		resp, err := s.cli.Get(ctx, s.metaKey(name))
		if err != nil {
			return nil, fmt.Errorf("etcd store: read stream %q: %w", name, err)
		}
		if len(resp.Kvs) == 0 {
			return nil, fmt.Errorf("stream %q: %w", name, store.ErrNotFound)
		}
		st, err := read(resp.Kvs[0].Value, resp.Header.Revision)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue // compacted between the reads: read again
		}
		return st, err
	}
	return nil, fmt.Errorf("etcd store: stream %q: history compacted on every read", name)
}

// ListStreams implements store.Store, sorted by name, all at one revision.
func (s *Store) ListStreams(ctx context.Context) ([]*config.Config, error) {
	for range maxAttempts {
		if err := s.check(ctx); err != nil {
			return nil, err
		}
		out, rev, err := s.listStreams(ctx)
		if errors.Is(err, rpctypes.ErrCompacted) {
			continue
		}
		if err == nil {
			s.noteListRev(rev)
		}
		return out, err
	}
	return nil, errors.New("etcd store: list streams: history compacted on every read")
}

func (s *Store) listStreams(ctx context.Context) ([]*config.Config, int64, error) {
	resp, err := s.cli.Get(ctx, s.metaPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("etcd store: list streams: %w", err)
	}
	rev := resp.Header.Revision
	out := make([]*config.Config, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		st, err := s.readStream(ctx, strings.TrimPrefix(string(kv.Key), s.metaPrefix()), kv.Value, rev)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, st)
	}
	return out, rev, nil
}

// PutSink implements store.Store.
func (s *Store) PutSink(ctx context.Context, sp *confighubv1.Sink) error {
	if sp.GetName() == "" || strings.Contains(sp.GetName(), "/") {
		return fmt.Errorf("etcd store: invalid sink name %q", sp.GetName())
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(sp)
	if err != nil {
		return fmt.Errorf("encode sink %q: %w", sp.GetName(), err)
	}
	s.writing.RLock()
	defer s.writing.RUnlock()
	resp, err := s.cli.Put(ctx, s.sinkKey(sp.GetName()), string(raw))
	if err != nil {
		return fmt.Errorf("etcd store: put sink %q: %w", sp.GetName(), err)
	}
	s.recordOwn(resp.Header.Revision)
	return nil
}

// FingerprintKey implements store.Store: the first replica to
// ask stores its key (a create-if-absent transaction); every other gets
// that one.
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

// DeleteSink implements store.Store: it removes the spec and the applied
// record in one transaction; ErrNotFound when neither exists.
func (s *Store) DeleteSink(ctx context.Context, name string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.writing.RLock()
	defer s.writing.RUnlock()
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpDelete(s.sinkKey(name)), clientv3.OpDelete(s.appliedKey(name))).Commit()
	if err != nil {
		return fmt.Errorf("etcd store: delete sink %q: %w", name, err)
	}
	var n int64
	for _, r := range resp.Responses {
		n += r.GetResponseDeleteRange().GetDeleted()
	}
	if n == 0 {
		return fmt.Errorf("sink %q: %w", name, store.ErrNotFound)
	}
	s.recordOwn(resp.Header.Revision)
	return nil
}

// ListSinks implements store.Store, sorted by name.
func (s *Store) ListSinks(ctx context.Context) ([]*confighubv1.Sink, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.sinkPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd store: list sinks: %w", err)
	}
	out := make([]*confighubv1.Sink, 0, len(resp.Kvs))
	names := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		sp, err := decodeSink(kv.Key, kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
		names[sp.GetName()] = true
	}
	s.noteListRev(resp.Header.Revision)
	s.mu.Lock()
	s.listedSinks = names
	s.mu.Unlock()
	return out, nil
}

func decodeSink(key, v []byte) (*confighubv1.Sink, error) {
	sp := &confighubv1.Sink{}
	if err := proto.Unmarshal(v, sp); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, key, err)
	}
	return sp, nil
}

// RecordApplied implements store.Store.
func (s *Store) RecordApplied(ctx context.Context, a store.Applied) error {
	if a.Sink == "" || strings.Contains(a.Sink, "/") {
		return fmt.Errorf("etcd store: invalid sink name %q", a.Sink)
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	raw, err := json.Marshal(appliedRecord{Stream: a.Stream, Generation: a.Generation, Hash: a.Hash, Time: a.Time})
	if err != nil {
		return err
	}
	if _, err := s.cli.Put(ctx, s.appliedKey(a.Sink), string(raw)); err != nil {
		return fmt.Errorf("etcd store: record applied of %q: %w", a.Sink, err)
	}
	return nil
}

// ListApplied implements store.Store, sorted by sink name.
func (s *Store) ListApplied(ctx context.Context) ([]store.Applied, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.appliedPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd store: list applied: %w", err)
	}
	out := make([]store.Applied, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r appliedRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, kv.Key, err)
		}
		out = append(out, store.Applied{Sink: strings.TrimPrefix(string(kv.Key), s.appliedPrefix()),
			Stream: r.Stream, Generation: r.Generation, Hash: r.Hash, Time: r.Time})
	}
	return out, nil
}

// Close stops every watch and waits for them; the client stays open. It
// is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}
