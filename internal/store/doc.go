// Package store defines what the hub keeps durably and the interface its
// backends implement: bolt (the embedded default), memory (tests) and etcd
// (replicas).
//
// The stores take and return the hub's one record shape, *config.Config.
// What is stored before a push is acknowledged: the stream's config bytes
// as pushed (a YAML config stays YAML), format, hash, generation, labels
// and accept time; the generation is assigned and expected_generation
// checked in the same commit. The committed config comes back at its
// generation sharing the caller's bytes and JSON form, so a stored config
// is held once (storetest RoundTrip; hub TestPushHoldsTheBytesOnce), and
// every field survives a restart (storetest PersistsAcrossReopen). StageConfig
// writes the bytes aside while the hub checks
// and hashes them, and a small commit makes them durable and part of the
// stream (bolt: a flush of the staged file, then its index transaction),
// or they are discarded if the check fails; staged bytes are never visible.
// A staged handle keeps nothing of StageConfig's context, which the hub
// ends once the stage returns, before it commits (bolt
// TestCommitAfterStageContextEnds).
// A store writes none of the bytes of a stage below its DeferBelow
// (memory and etcd: none at all, their commit writes): the commit writes
// them (the bolt store inline in its index transaction: bolt
// TestCommitAfterStageContextEnds at both sizes), so the hub checks and hashes such a push before it
// stages it, on one goroutine.
// Each sink's applied generation and hash are recorded as they happen.
// Sinks put at run time are stored too. The key of the fingerprints shown in place of sink
// secrets is made once and kept, so a fingerprint read before a restart
// or from another replica still matches (storetest FingerprintKey). Each
// stream's last convergence is kept, so a
// restart, or on etcd any replica, shows the time observed and the
// convergence metric does not count it again (storetest Converged).
// The last generations of each stream are kept with their bytes, origin,
// labels and accept time (Retention; storetest RetentionCount, RetentionBytes,
// GetGeneration); DeleteStream removes all of a stream (storetest DeleteStream).
// Replica mode takes a Shared store (etcd), which also follows the others' changes.
package store
