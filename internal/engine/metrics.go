package engine

import (
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Result is how one apply ended, as passed to Metrics.ApplyDone and
// carried by an ApplyOutcome: a closed set (Results).
type Result string

// Results of one apply.
const (
	// ResultApplied: the sink's Apply returned nil.
	ResultApplied Result = "applied"
	// ResultSkipped: the hash was already applied; Apply was not called.
	ResultSkipped Result = "skipped"
	// ResultFailed: a retryable failure; the sink backs off.
	ResultFailed Result = "failed"
	// ResultRejected: a permanent failure; not retried until a new generation.
	ResultRejected Result = "rejected"
	// ResultCancelled: a newer generation cancelled the apply in flight.
	ResultCancelled Result = "cancelled"
	// ResultDegraded: the destination rejected the generation and took a
	// fallback of it (sink.Degraded).
	ResultDegraded Result = "degraded"
)

// Results returns the closed set, in the order docs/metrics.md lists it, as
// a fresh slice the caller owns (no shared mutable package state).
func Results() []Result {
	return []Result{ResultApplied, ResultSkipped, ResultFailed, ResultRejected, ResultDegraded, ResultCancelled}
}

// Metrics receives the engine's measurements. Implementations must be safe
// for concurrent use and fast: some methods are called while the engine
// holds its lock. The Prometheus implementation lives elsewhere; the
// default does nothing.
type Metrics interface {
	// ApplyDone is called once per attempt (or hash skip). reason is the
	// error code for failures (sink.Code: "timeout", "rejected", "internal", ...) or why
	// it was skipped.
	ApplyDone(sink, kind string, result Result, reason string, d time.Duration, configBytes int)
	// StateChanged is called when a sink's state changes.
	StateChanged(sink, kind string, from, to confighubv1.SinkState)
	// Coalesced is called when a generation was replaced in a sink's slot
	// before the sink attempted it.
	Coalesced(sink, kind string)
	// EntityErrors sets the number of per-entity errors of the sink's last
	// failed apply (0 after a success).
	EntityErrors(sink, kind string, n int)
	// ExcludedEntities sets the number of entities the fallback the sink
	// runs leaves out (0 when it runs no fallback).
	ExcludedEntities(sink, kind string, n int)
	// LastSuccess sets the time of the sink's last successful apply.
	LastSuccess(sink, kind string, t time.Time)
	// StreamGeneration sets a stream's current generation.
	StreamGeneration(stream string, generation uint64)
	// StreamConverged is called once per generation when every sink of the
	// stream applied it; d runs from the config's accept time.
	StreamConverged(stream string, generation uint64, d time.Duration)
	// SinkRemoved is called when a sink is deleted, so its series can go.
	SinkRemoved(sink, kind string)
	// StreamDeleted is called when a stream is deleted, so its series can
	// go.
	StreamDeleted(stream string)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) ApplyDone(string, string, Result, string, time.Duration, int)              {}
func (NopMetrics) StateChanged(string, string, confighubv1.SinkState, confighubv1.SinkState) {}
func (NopMetrics) Coalesced(string, string)                                                  {}
func (NopMetrics) EntityErrors(string, string, int)                                          {}
func (NopMetrics) ExcludedEntities(string, string, int)                                      {}
func (NopMetrics) LastSuccess(string, string, time.Time)                                     {}
func (NopMetrics) StreamGeneration(string, uint64)                                           {}
func (NopMetrics) StreamConverged(string, uint64, time.Duration)                             {}
func (NopMetrics) SinkRemoved(string, string)                                                {}
func (NopMetrics) StreamDeleted(string)                                                      {}
