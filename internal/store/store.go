package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
)

var (
	// ErrNotFound is returned for an unknown stream or sink.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned by CommitConfig when expected_generation does
	// not match the stream's current generation.
	ErrConflict = errors.New("generation conflict")
	// ErrCorrupt is returned when stored data cannot be read; the store is
	// never reset silently.
	ErrCorrupt = errors.New("store data is corrupt")
	// ErrNotRetained is wrapped by GetGeneration for a generation the store
	// no longer keeps (or never had); the message names the retained range.
	ErrNotRetained = errors.New("generation not retained")
)

// NotRetained is the error of GetGeneration for generation gen of stream
// when the store keeps generations oldest..newest of it.
func NotRetained(stream string, gen, oldest, newest uint64) error {
	return fmt.Errorf("stream %q keeps generations %d-%d, not %d: %w", stream, oldest, newest, gen, ErrNotRetained)
}

// Applied is what one sink last applied; the durable stores keep it in
// JSON under the sink's name.
type Applied struct {
	Sink       string    `json:"-"`
	Stream     string    `json:"stream"`
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Time       time.Time `json:"time"`
}

// Converged is when every sink of a stream had applied a generation, as the
// hub observed it; the durable stores keep it in JSON under the stream's name.
type Converged struct {
	Stream     string    `json:"-"`
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
}

// Retention defaults: the last DefaultHistory generations of each stream,
// at most DefaultHistoryBytes of them.
const (
	DefaultHistory      = 50
	DefaultHistoryBytes = 1 << 30
)

// Retention is how many generations of each stream a store keeps with
// their bytes: at most History of them and at most Bytes in all (0 or
// less: unbounded), the oldest going first; the current one always stays.
type Retention struct {
	History int
	Bytes   int64
}

// DefaultRetention is DefaultHistory generations, DefaultHistoryBytes.
func DefaultRetention() Retention {
	return Retention{History: DefaultHistory, Bytes: DefaultHistoryBytes}
}

// Keep returns how many of the newest generations r keeps, given their
// sizes newest first.
func (r Retention) Keep(sizes []int64) int {
	var sum int64
	for i, sz := range sizes {
		sum += sz
		if i > 0 && (i >= r.History || (r.Bytes > 0 && sum > r.Bytes)) {
			return i
		}
	}
	return len(sizes)
}

// GenerationInfo is one retained generation without its bytes.
type GenerationInfo struct {
	Stream     string
	Generation uint64
	Hash       string
	Size       int64
	Labels     map[string]string
	AcceptTime time.Time
	Origin     config.Origin
}

// Store is a durable home for streams, their retained generations, sinks,
// applied and convergence records. Every method is safe for concurrent
// use.
type Store interface {
	// CommitConfig makes c the next generation of stream c.Stream, durably,
	// and returns c.WithGeneration of it (sharing c's bytes). expected > 0
	// must equal the current generation (0 for a new stream), else
	// ErrConflict. When c.Hash equals the current hash nothing is stored and
	// the current config is returned with unchanged. c.Generation is
	// ignored. The generations past the retention are dropped.
	CommitConfig(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	// GetStream returns the stream's current config or ErrNotFound.
	GetStream(ctx context.Context, name string) (*config.Config, error)
	// ListStreams returns every stream's current config.
	ListStreams(ctx context.Context) ([]*config.Config, error)
	// DeleteStream removes the stream's config, its retained generations
	// and its convergence record; ErrNotFound when it has none.
	DeleteStream(ctx context.Context, name string) error
	// ListGenerations returns the stream's retained generations, newest
	// first, at most limit (<= 0: all) of those older than before (0: all);
	// ErrNotFound for an unknown stream.
	ListGenerations(ctx context.Context, stream string, before uint64, limit int) ([]GenerationInfo, error)
	// GetGeneration returns a retained generation's config; another wraps
	// ErrNotRetained, an unknown stream is ErrNotFound.
	GetGeneration(ctx context.Context, stream string, gen uint64) (*config.Config, error)

	// PutSink stores a sink spec (create or replace).
	PutSink(ctx context.Context, s *confighubv1.Sink) error
	// DeleteSink removes a sink and its applied record; ErrNotFound if absent.
	DeleteSink(ctx context.Context, name string) error
	// ListSinks returns every stored sink spec.
	ListSinks(ctx context.Context) ([]*confighubv1.Sink, error)
	// RecordApplied stores what a sink applied (overwrites the previous).
	RecordApplied(ctx context.Context, a Applied) error
	// ListApplied returns every sink's applied record.
	ListApplied(ctx context.Context) ([]Applied, error)
	// RecordConverged stores c as its stream's convergence (overwrites the
	// previous), so a restarted hub shows it instead of observing it again.
	RecordConverged(ctx context.Context, c Converged) error
	// ListConverged returns every stream's convergence record.
	ListConverged(ctx context.Context) ([]Converged, error)
	// FingerprintKey returns the stored key of the fingerprints shown in
	// place of sink secrets, storing newKey when none is (concurrent
	// callers all get the first), so fingerprints hold across restarts
	// and replicas.
	FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error)

	// StageConfig writes raw aside for stream, overlapping the hub's
	// check, and returns the handle that commits or discards it. Staged
	// bytes are invisible until Commit; raw must not change until then.
	// Canceling ctx stops the write; the handle keeps nothing of ctx.
	// tee, when not nil, is written all of raw in order as it is written.
	StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (Staged, error)
	// DeferBelow is the size below which StageConfig writes none of the
	// bytes (the commit does): there is no write to overlap.
	DeferBelow() int
	// StageStream opens a stage of size bytes for stream that receives a
	// configuration in pieces (an upload's chunks) as each arrives.
	StageStream(ctx context.Context, stream string, size int64) (StageWriter, error)

	Close() error
}

// Shared is a store that several replicas share (etcd): Watch follows the
// changes the others make. Replica mode takes it.
type Shared interface {
	Store
	Watch(ctx context.Context) <-chan Event
}

// Event is a change seen by Shared.Watch: a stream's new generation, or a
// sink spec put or deleted.
type Event struct {
	Config      *config.Config
	SinkPut     *confighubv1.Sink
	SinkDeleted string
}

// Staged is configuration bytes written by StageConfig, not yet part of a
// stream. Exactly one of Commit or Discard is called; Discard after Commit
// is a no-op.
type Staged interface {
	// Commit is CommitConfig for the staged bytes (c.Raw the staged
	// slice); after it they are part of the stream or removed.
	Commit(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	// Discard removes the staged bytes (e.g. the check failed).
	Discard() error
}

// StageWriter receives a streamed stage's bytes in order; more than the
// announced size is an error. Exactly one of Staged or Discard ends it.
type StageWriter interface {
	Write(p []byte) (int, error)
	// Staged returns the stage's handle once all its bytes were written;
	// its Commit takes them, kept by the caller, as c.Raw.
	Staged() (Staged, error)
	// Discard removes what was written.
	Discard() error
}

// Meta is a generation's record without its bytes, as the durable stores
// keep it in JSON (bolt and etcd add where the bytes are).
type Meta struct {
	Generation uint64            `json:"generation"`
	Hash       string            `json:"hash"`
	Format     string            `json:"format"`
	Size       int64             `json:"size"`
	Labels     map[string]string `json:"labels,omitempty"`
	AcceptTime time.Time         `json:"accept_time"`
	Origin     *originRecord     `json:"origin,omitempty"`
}

// originRecord is config.Origin with its JSON names.
type originRecord struct {
	Pusher     string         `json:"pusher,omitempty"`
	Peer       string         `json:"peer,omitempty"`
	RollbackOf uint64         `json:"rollback_of,omitempty"`
	Entities   map[string]int `json:"entities,omitempty"`
}

// MetaOf is the Meta of c at generation gen.
func MetaOf(c *config.Config, gen uint64) Meta {
	m := Meta{Generation: gen, Hash: c.Hash, Format: c.Format.String(), Size: int64(len(c.Raw)), Labels: c.Labels, AcceptTime: c.AcceptTime}
	if o := c.Origin; o.Pusher != "" || o.Peer != "" || o.RollbackOf != 0 || len(o.Entities) > 0 {
		m.Origin = (*originRecord)(&o)
	}
	return m
}

func (m Meta) origin() config.Origin {
	if m.Origin == nil {
		return config.Origin{}
	}
	return config.Origin(*m.Origin)
}

// Info is the GenerationInfo of generation m of stream.
func (m Meta) Info(stream string) GenerationInfo {
	return GenerationInfo{Stream: stream, Generation: m.Generation, Hash: m.Hash, Size: m.Size, Labels: m.Labels, AcceptTime: m.AcceptTime, Origin: m.origin()}
}

// Config is generation m of stream with bytes raw; an unknown format is
// ErrCorrupt.
func (m Meta) Config(stream string, raw []byte) (*config.Config, error) {
	f, err := config.ParseFormat(m.Format)
	if err != nil {
		return nil, fmt.Errorf("%w: stream %q generation %d: %v", ErrCorrupt, stream, m.Generation, err)
	}
	return config.New(stream, m.Generation, m.Hash, f, raw, nil, m.Labels, m.AcceptTime).WithOrigin(m.origin()), nil
}

// Committer is the commit of a store whose stage writes nothing (memory,
// etcd): its CommitConfig writes the bytes.
type Committer func(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error)

// Direct is StageConfig, DeferBelow and StageStream for such a store,
// which embeds it with Commit set to its CommitConfig.
type Direct struct{ Commit Committer }

// StageConfig implements Store: it feeds tee; Commit writes the bytes.
func (d Direct) StageConfig(_ context.Context, _ string, raw []byte, tee io.Writer) (Staged, error) {
	return StageDirect(d.Commit, raw, tee)
}

// DeferBelow implements Store: a stage never writes.
func (Direct) DeferBelow() int { return math.MaxInt }

// StageStream implements Store: the caller keeps the bytes written.
func (d Direct) StageStream(_ context.Context, _ string, size int64) (StageWriter, error) {
	return StageStreamDirect(d.Commit, size), nil
}

// StageDirect is Direct.StageConfig with commit.
func StageDirect(commit Committer, raw []byte, tee io.Writer) (Staged, error) {
	if tee != nil {
		if _, err := tee.Write(raw); err != nil {
			return nil, err
		}
	}
	return &direct{commit: commit}, nil
}

// StageStreamDirect is Direct.StageStream with commit.
func StageStreamDirect(commit Committer, size int64) StageWriter {
	return &direct{commit: commit, size: size}
}

// direct is a stage that counts what it is written (the caller keeps it).
type direct struct {
	commit  Committer
	size, n int64
}

func (d *direct) Commit(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error) {
	return d.commit(ctx, c, expected)
}

func (d *direct) Write(p []byte) (int, error) {
	if d.n+int64(len(p)) > d.size {
		return 0, fmt.Errorf("stage: %d bytes written past the announced %d", d.n+int64(len(p))-d.size, d.size)
	}
	d.n += int64(len(p))
	return len(p), nil
}

func (d *direct) Staged() (Staged, error) {
	if d.n != d.size {
		return nil, fmt.Errorf("stage: %d of %d bytes written", d.n, d.size)
	}
	return d, nil
}

func (*direct) Discard() error { return nil }
