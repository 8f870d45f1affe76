package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
)

// ErrNotFound is returned for an unknown stream or sink.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by CommitConfig when expected_generation does not
// match the stream's current generation.
var ErrConflict = errors.New("generation conflict")

// ErrCorrupt is returned by Open when the data cannot be read; the store is
// never reset silently.
var ErrCorrupt = errors.New("store data is corrupt")

// Applied is what one sink last applied.
type Applied struct {
	Sink       string
	Stream     string
	Generation uint64
	Hash       string
	Time       time.Time
}

// Converged is when every sink of a stream had applied a generation, as the
// hub observed it.
type Converged struct {
	Stream     string
	Generation uint64
	Time       time.Time
}

// ErrNotRetained is wrapped by GetGeneration for a generation the store no
// longer keeps (or never had); the message names the retained range.
var ErrNotRetained = errors.New("generation not retained")

// Retention defaults: the last DefaultHistory generations of each stream
// are kept with their bytes, at most DefaultHistoryBytes of them per
// stream (the current generation always), the oldest going first.
const (
	DefaultHistory      = 50
	DefaultHistoryBytes = 1 << 30
)

// Retention is how many generations of each stream a store keeps with
// their bytes: at most History of them and at most Bytes in all, whichever
// is reached first; the current generation is always kept.
type Retention struct {
	History int
	Bytes   int64
}

// DefaultRetention is DefaultHistory generations, DefaultHistoryBytes.
func DefaultRetention() Retention {
	return Retention{History: DefaultHistory, Bytes: DefaultHistoryBytes}
}

// Normalized returns r with History at least 1 and Bytes, when 0 or
// less, unbounded.
func (r Retention) Normalized() Retention {
	r.History = max(r.History, 1)
	if r.Bytes <= 0 {
		r.Bytes = 1<<63 - 1
	}
	return r
}

// Keep returns how many of the newest generations r keeps, given their
// sizes newest first: every one while the count and the sum stay within
// r, and always the first (the current generation).
func (r Retention) Keep(sizes []int64) int {
	r = r.Normalized()
	var sum int64
	for i, sz := range sizes {
		sum += sz
		if i > 0 && (i >= r.History || sum > r.Bytes) {
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

// InfoOf is the GenerationInfo of c.
func InfoOf(c *config.Config) GenerationInfo {
	return GenerationInfo{Stream: c.Stream, Generation: c.Generation, Hash: c.Hash, Size: int64(len(c.Raw)),
		Labels: c.Labels, AcceptTime: c.AcceptTime, Origin: c.Origin}
}

// NotRetained is the error of GetGeneration for generation gen of stream
// when the store keeps generations oldest..newest of it.
func NotRetained(stream string, gen, oldest, newest uint64) error {
	return fmt.Errorf("stream %q keeps generations %d-%d, not %d: %w", stream, oldest, newest, gen, ErrNotRetained)
}

// Page returns the entries of infos (newest first) older than before
// (before 0: from the newest), at most limit of them (limit <= 0: all).
func Page(infos []GenerationInfo, before uint64, limit int) []GenerationInfo {
	i := 0
	if before > 0 {
		for i < len(infos) && infos[i].Generation >= before {
			i++
		}
	}
	infos = infos[i:]
	if limit > 0 && len(infos) > limit {
		infos = infos[:limit]
	}
	return infos
}

// Store is a durable home for streams, their retained generations, sinks,
// applied and convergence records. Every method is safe for concurrent
// use.
type Store interface {
	// CommitConfig makes c the next generation of stream c.Stream, durably,
	// and returns it as stored: c.WithGeneration of the assigned generation,
	// sharing c's bytes (they are held once). expected > 0 must equal the
	// current generation (0 when the stream does not exist), else
	// ErrConflict and nothing is stored. When c.Hash equals the current
	// hash nothing is stored and the current config is returned with
	// unchanged = true. c.Generation is ignored and c is not modified.
	// The commit drops the generations that fall out of the retention.
	CommitConfig(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	// GetStream returns the stream's current config or ErrNotFound.
	GetStream(ctx context.Context, name string) (*config.Config, error)
	// ListStreams returns every stream's current config.
	ListStreams(ctx context.Context) ([]*config.Config, error)
	// DeleteStream removes the stream's config, its retained generations
	// and its convergence record; ErrNotFound when it has none.
	DeleteStream(ctx context.Context, name string) error

	// ListGenerations returns the stream's retained generations, newest
	// first, at most limit of them older than before (before 0: from the
	// newest). ErrNotFound for an unknown stream.
	ListGenerations(ctx context.Context, stream string, before uint64, limit int) ([]GenerationInfo, error)
	// GetGeneration returns a retained generation's config; a generation
	// not retained is an error wrapping ErrNotRetained whose message names
	// the retained range ("stream s keeps generations 12-61"), an unknown
	// stream ErrNotFound.
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
	// previous one), so a restarted hub shows it as it was observed
	// instead of observing it again.
	RecordConverged(ctx context.Context, c Converged) error
	// ListConverged returns every stream's convergence record.
	ListConverged(ctx context.Context) ([]Converged, error)

	// FingerprintKey returns the stored key of the fingerprints shown in
	// place of sink secrets; when none is stored yet it stores newKey
	// (once: concurrent callers all get the first stored key) and returns
	// it. So a fingerprint stays the same across restarts and, on a
	// shared store, across replicas.
	FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error)

	// StageConfig writes raw aside for stream (durably, or so that Commit
	// makes it durable with the commit) and returns the handle that
	// commits or discards it, so that the write overlaps the hub's check.
	// Staged bytes are invisible to readers until Commit; a crash before
	// Commit leaves nothing a reader sees. raw must not change until the
	// handle is committed or discarded. Canceling ctx stops the write;
	// the handle must not keep ctx: the hub ends it once StageConfig
	// returns, before Commit (bolt TestCommitAfterStageContextEnds).
	// tee, when not nil, is written all of raw, in order, as it is written
	// (so a hash shares the pass over the bytes with the write).
	StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (Staged, error)
	// DeferBelow is the size below which StageConfig writes none of the
	// bytes (the commit does), so a caller has no write to overlap with
	// its own work on such bytes.
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

// Staged is configuration bytes written by StageConfig, not yet part of a
// stream. Exactly one of Commit or Discard is called; Discard after Commit
// is a no-op, so it may be deferred.
type Staged interface {
	// Commit is CommitConfig for the staged bytes: c.Stream is the staged
	// stream and c.Raw the staged slice (c.Hash its hash). Whatever it
	// returns, the staged bytes are either part of the stream or removed.
	Commit(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	// Discard removes the staged bytes (e.g. the check failed).
	Discard() error
}

// StageWriter receives a streamed stage's bytes in order. Exactly one of
// Staged or Discard ends it.
type StageWriter interface {
	// Write writes the next bytes; more than the announced size is an
	// error.
	Write(p []byte) (int, error)
	// Staged returns the handle of the stage once all its bytes were
	// written. Its Commit takes a config whose Raw is the bytes written,
	// kept by the caller, and stores them as they are: nothing is read
	// back.
	Staged() (Staged, error)
	// Discard removes what was written.
	Discard() error
}

// Event is a change seen by Shared.Watch.
type Event struct {
	// Config is set when a stream got a new generation.
	Config *config.Config
	// SinkPut / SinkDeleted are set when a sink spec changed.
	SinkPut     *confighubv1.Sink
	SinkDeleted string
}

// OriginRecord is config.Origin as the stores write it in JSON; nil for
// an empty origin.
type OriginRecord struct {
	Pusher     string         `json:"pusher,omitempty"`
	Peer       string         `json:"peer,omitempty"`
	RollbackOf uint64         `json:"rollback_of,omitempty"`
	Entities   map[string]int `json:"entities,omitempty"`
}

// RecordOf is o as an OriginRecord, nil when o is empty.
func RecordOf(o config.Origin) *OriginRecord {
	if o.Pusher == "" && o.Peer == "" && o.RollbackOf == 0 && len(o.Entities) == 0 {
		return nil
	}
	return &OriginRecord{Pusher: o.Pusher, Peer: o.Peer, RollbackOf: o.RollbackOf, Entities: o.Entities}
}

// Origin is the config.Origin of r (empty for nil).
func (r *OriginRecord) Origin() config.Origin {
	if r == nil {
		return config.Origin{}
	}
	return config.Origin{Pusher: r.Pusher, Peer: r.Peer, RollbackOf: r.RollbackOf, Entities: r.Entities}
}
