package engine

import (
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Result is how one apply ended: a closed set (Results).
type Result string

// Results of one apply.
const (
	ResultApplied   Result = "applied"   // Apply returned nil
	ResultSkipped   Result = "skipped"   // the hash was applied already; Apply was not called
	ResultFailed    Result = "failed"    // a retryable failure: the sink backs off
	ResultRejected  Result = "rejected"  // permanent: not retried until a new generation
	ResultCancelled Result = "cancelled" // a newer generation cancelled the apply in flight
	ResultDegraded  Result = "degraded"  // rejected; the destination took a fallback (sink.Degraded)
)

// Results returns the closed set, in the order docs/metrics.md lists it.
func Results() []Result {
	return []Result{ResultApplied, ResultSkipped, ResultFailed, ResultRejected, ResultDegraded, ResultCancelled}
}

// Metrics receives the engine's measurements, some under its lock: be safe and fast.
type Metrics interface {
	// ApplyDone: per attempt or hash skip; reason is the code or skip cause.
	ApplyDone(sink, kind string, result Result, reason string, d time.Duration, configBytes int)
	StateChanged(sink, kind string, from, to confighubv1.SinkState)
	// Coalesced: a generation was replaced in the slot before an attempt.
	Coalesced(sink, kind string)
	// EntityErrors: of the last failed apply (0 after a success).
	EntityErrors(sink, kind string, n int)
	// ExcludedEntities: left out by the fallback the sink runs (0: none).
	ExcludedEntities(sink, kind string, n int)
	LastSuccess(sink, kind string, t time.Time)
	StreamGeneration(stream string, generation uint64)
	// StreamConverged: once per generation; d runs from its accept time.
	StreamConverged(stream string, generation uint64, d time.Duration)
	// SinkRemoved and StreamDeleted: their series can go.
	SinkRemoved(sink, kind string)
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
