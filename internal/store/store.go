package store

import (
	"context"
	"errors"
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

// ConvergedStore is implemented by stores that keep each stream's last
// convergence, so that a restarted hub shows it as it was observed instead
// of observing it again at the restart.
type ConvergedStore interface {
	// RecordConverged stores c as its stream's convergence (overwrites the
	// previous one).
	RecordConverged(ctx context.Context, c Converged) error
	// ListConverged returns every stream's convergence record.
	ListConverged(ctx context.Context) ([]Converged, error)
}

// GenerationReader is implemented by stores that keep the bytes of a
// stream's recent generations, not only its current one (the etcd store:
// a replica reads there the configuration another replica's sink failed).
type GenerationReader interface {
	// GetGeneration returns the stream's generation gen, or ErrNotFound
	// when the stream has none or it is no longer kept.
	GetGeneration(ctx context.Context, stream string, gen uint64) (*config.Config, error)
}

// Store is a durable home for streams, sinks and applied records. Every
// method is safe for concurrent use.
type Store interface {
	// CommitConfig makes c the next generation of stream c.Stream, durably,
	// and returns it as stored: c.WithGeneration of the assigned generation,
	// sharing c's bytes (they are held once). expected > 0 must equal the
	// current generation (0 when the stream does not exist), else
	// ErrConflict and nothing is stored. When c.Hash equals the current
	// hash nothing is stored and the current config is returned with
	// unchanged = true. c.Generation is ignored and c is not modified.
	CommitConfig(ctx context.Context, c *config.Config, expected uint64) (stored *config.Config, unchanged bool, err error)
	// GetStream returns the stream's current config or ErrNotFound.
	GetStream(ctx context.Context, name string) (*config.Config, error)
	// ListStreams returns every stream's current config.
	ListStreams(ctx context.Context) ([]*config.Config, error)

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

	Close() error
}

// FingerprintKeyer is implemented by stores that keep the key of the
// fingerprints shown in place of sink secrets, so that a fingerprint stays
// the same across restarts and, on a shared store, across replicas (a
// client may read a spec from one and put it back through another).
type FingerprintKeyer interface {
	// FingerprintKey returns the stored key; when none is stored yet it
	// stores newKey (once: concurrent callers all get the first stored
	// key) and returns it.
	FingerprintKey(ctx context.Context, newKey []byte) ([]byte, error)
}

// Stager is implemented by stores that can make a configuration's bytes
// durable before it has been checked and hashed, so that the write
// overlaps the check (the bolt store writes them to their own file). Staged
// bytes are invisible to readers until Commit; a crash before Commit leaves
// nothing a reader sees, and the store removes the bytes at its next open.
type Stager interface {
	// StageConfig writes raw aside for stream (durably, or so that Commit
	// makes it durable with the commit) and returns the handle that
	// commits or discards it. raw must not change until the
	// handle is committed or discarded. Canceling ctx stops the write;
	// the handle must not keep ctx: the hub ends it once StageConfig
	// returns, before Commit (bolt TestCommitAfterStageContextEnds).
	// tee, when not nil, is written all of raw, in order, as it is written
	// (so a hash shares the pass over the bytes with the write).
	StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (Staged, error)
}

// Deferrer is an optional Stager capability: StageConfig of fewer than
// DeferBelow bytes writes none of them (the commit's flush does, or, for a
// record acked through a commit log, the store after the ack), so a
// caller has no write to overlap with its own work on such bytes.
type Deferrer interface {
	DeferBelow() int
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

// StreamStager is implemented by stores that can stage a configuration
// that arrives in pieces (an upload's chunks) as each piece arrives, so
// the bytes are on their way to disk before the last one came and are not
// held in memory meanwhile.
type StreamStager interface {
	// StageStream opens a stage of size bytes for stream.
	StageStream(ctx context.Context, stream string, size int64) (StageWriter, error)
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

// Event is a change seen by a Watcher.
type Event struct {
	// Config is set when a stream got a new generation.
	Config *config.Config
	// SinkPut / SinkDeleted are set when a sink spec changed.
	SinkPut     *confighubv1.Sink
	SinkDeleted string
}

// Watcher is implemented by shared stores (etcd), where another replica may
// commit: the hub follows the changes it did not make itself.
type Watcher interface {
	Watch(ctx context.Context) <-chan Event
}
