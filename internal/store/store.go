package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
)

// The store's sentinel errors; stored data that cannot be read is ErrCorrupt, never reset silently.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("generation conflict")
	ErrCorrupt     = errors.New("store data is corrupt")
	ErrNotRetained = errors.New("generation not retained")
)

// NotRetained is GetGeneration's error for gen when oldest..newest are kept.
func NotRetained(stream string, gen, oldest, newest uint64) error {
	return fmt.Errorf("stream %q keeps generations %d-%d, not %d: %w", stream, oldest, newest, gen, ErrNotRetained)
}

// Applied is what one sink last applied, kept in JSON under its name.
type Applied struct {
	Sink       string    `json:"-"`
	Stream     string    `json:"stream"`
	Generation uint64    `json:"generation"`
	Hash       string    `json:"hash"`
	Time       time.Time `json:"time"`
}

// Converged is when the hub saw every sink of a stream apply a generation.
type Converged struct {
	Stream     string    `json:"-"`
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
}

// Retention defaults.
const (
	DefaultHistory      = 50
	DefaultHistoryBytes = 1 << 30
)

// Retention bounds each stream's kept generations to History of them and
// Bytes in all (<= 0: unbounded), oldest first out; the current one stays.
type Retention struct {
	History int
	Bytes   int64
}

// DefaultRetention is DefaultHistory generations, DefaultHistoryBytes.
func DefaultRetention() Retention { return Retention{DefaultHistory, DefaultHistoryBytes} }

// Keep is how many of the generations of sizes (newest first) r keeps.
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

// Store keeps streams, their retained generations, sinks, applied and convergence
// records durably; it is safe for concurrent use; lists are sorted by name.
type Store interface {
	// CommitConfig durably makes c (its Generation ignored) the stream's
	// next generation, returned sharing c's bytes; expected > 0 must be the
	// current generation (ErrConflict); c.Hash equal to the current one
	// stores nothing and returns the current config, unchanged.
	CommitConfig(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	GetStream(ctx context.Context, name string) (*config.Config, error)
	ListStreams(ctx context.Context) ([]*config.Config, error)
	// DeleteStream removes the stream's generations and convergence record.
	DeleteStream(ctx context.Context, name string) error
	// ListGenerations lists at most limit (<= 0: all) retained generations
	// older than before (0: all), newest first.
	ListGenerations(ctx context.Context, stream string, before uint64, limit int) ([]GenerationInfo, error)
	// GetGeneration returns a retained generation; another is ErrNotRetained.
	GetGeneration(ctx context.Context, stream string, gen uint64) (*config.Config, error)

	PutSink(ctx context.Context, s *confighubv1.Sink) error
	// DeleteSink removes a sink's spec and applied record (ErrNotFound: neither).
	DeleteSink(ctx context.Context, name string) error
	ListSinks(ctx context.Context) ([]*confighubv1.Sink, error)
	RecordApplied(ctx context.Context, a Applied) error
	ListApplied(ctx context.Context) ([]Applied, error)
	// RecordConverged keeps c so a restarted hub shows it, not observes it again.
	RecordConverged(ctx context.Context, c Converged) error
	ListConverged(ctx context.Context) ([]Converged, error)
	// FingerprintKey returns the stored key of sink secrets' fingerprints,
	// storing newKey when there is none (concurrent callers get the first).
	FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error)

	// StageConfig writes raw (unchanged until Commit) aside for stream while
	// the hub checks it, feeding tee (if not nil) as it goes; staged bytes are
	// invisible until Commit, and the handle keeps nothing of ctx.
	StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (Staged, error)
	// DeferBelow is the size below which a stage writes nothing (the commit does).
	DeferBelow() int
	// StageStream opens a stage of size bytes that takes them as they arrive.
	StageStream(ctx context.Context, stream string, size int64) (StageWriter, error)

	Close() error
}

// Shared is a store replicas share (etcd); Watch follows the others' changes.
type Shared interface {
	Store
	Watch(ctx context.Context) <-chan Event
}

// Event is a stream's new generation or a sink spec put or deleted.
type Event struct {
	Config      *config.Config
	SinkPut     *confighubv1.Sink
	SinkDeleted string
}

// Staged is staged bytes: Commit (CommitConfig with c.Raw the staged
// bytes) or Discard ends it; Discard after Commit is a no-op.
type Staged interface {
	Commit(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	Discard() error
}

// StageWriter takes a stage's bytes in order, no more than announced, until
// Staged (all written; the caller keeps them for c.Raw) or Discard.
type StageWriter interface {
	Write(p []byte) (int, error)
	Staged() (Staged, error)
	Discard() error
}

// Meta is a generation's JSON record without its bytes.
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

func (m Meta) origin() (o config.Origin) {
	if m.Origin != nil {
		o = config.Origin(*m.Origin)
	}
	return o
}

// Info is the GenerationInfo of generation m of stream.
func (m Meta) Info(stream string) GenerationInfo {
	return GenerationInfo{Stream: stream, Generation: m.Generation, Hash: m.Hash, Size: m.Size, Labels: m.Labels, AcceptTime: m.AcceptTime, Origin: m.origin()}
}

// Config is generation m of stream with bytes raw.
func (m Meta) Config(stream string, raw []byte) (*config.Config, error) {
	f, err := config.ParseFormat(m.Format)
	if err != nil {
		return nil, fmt.Errorf("%w: stream %q generation %d: %v", ErrCorrupt, stream, m.Generation, err)
	}
	return config.New(stream, m.Generation, m.Hash, f, raw, nil, m.Labels, m.AcceptTime).WithOrigin(m.origin()), nil
}

// Locks is a mutex per name; the zero value is ready.
type Locks struct{ m sync.Map }

// Lock locks name's mutex and returns its unlock.
func (l *Locks) Lock(name string) func() {
	mu, _ := l.m.LoadOrStore(name, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// Committer is the CommitConfig of a store whose stages write nothing.
type Committer func(ctx context.Context, c *config.Config, expected uint64) (*config.Config, bool, error)

// Direct is the staging of a store whose commit writes the bytes (memory, etcd).
type Direct struct{ Commit Committer }

func (d Direct) StageConfig(_ context.Context, _ string, raw []byte, tee io.Writer) (Staged, error) {
	if tee != nil {
		if _, err := tee.Write(raw); err != nil {
			return nil, err
		}
	}
	return &direct{commit: d.Commit}, nil
}

func (Direct) DeferBelow() int { return math.MaxInt }

func (d Direct) StageStream(_ context.Context, _ string, size int64) (StageWriter, error) {
	return &direct{commit: d.Commit, size: size}, nil
}

// direct counts the bytes written to it; the caller keeps them.
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
