// Package store defines what the hub keeps durably and the interface its
// backends implement: bolt (the embedded default), memory (tests) and etcd
// (replicas, which take it as a Shared store that also follows the others'
// changes). Every backend passes test/storetest.
//
// A stream's config is stored as pushed (a YAML config stays YAML) with
// format, hash, generation, labels, origin and accept time; the generation
// is assigned and expected_generation checked in the same commit. The
// committed config comes back sharing the caller's bytes and JSON form, so
// it is held once (storetest RoundTrip; hub TestPushHoldsTheBytesOnce), and
// every field survives a restart (storetest PersistsAcrossReopen).
// StageConfig writes the bytes aside while the hub checks and hashes them;
// a small commit makes them part of the stream, or they are discarded;
// staged bytes are never visible (storetest Stage). Below DeferBelow a
// stage writes nothing and the commit writes the bytes (bolt
// TestCommitAfterStageContextEnds at both sizes), so the hub checks and
// hashes such a push before it stages it, on one goroutine.
// The last generations of each stream are kept with their bytes (storetest
// RetentionCount, RetentionBytes, GetGeneration); DeleteStream removes all
// of a stream (storetest DeleteStream). Sinks put at run time, each sink's
// applied generation, each stream's last convergence (storetest Converged)
// and the fingerprint key of sink secrets (storetest FingerprintKey) are
// kept too, so a restart or another replica shows the same.
package store
