// Package store defines what the hub keeps durably and the interface its
// backends implement: bolt (the embedded default), memory (tests) and etcd
// (replicas, as a Shared store). Every backend passes test/storetest.
//
//   - A config is stored as pushed with its format, hash, generation, labels, origin and accept time; the commit assigns the generation and checks expected_generation, and returns the caller's bytes, held once (storetest RoundTrip; hub TestPushHoldsTheBytesOnce); every field survives a restart (storetest PersistsAcrossReopen).
//   - StageConfig writes the bytes aside while the hub checks them; staged bytes are never visible (storetest Stage). Below DeferBelow a stage writes nothing and the commit writes the bytes (bolt TestCommitAfterStageContextEnds).
//   - The last generations of each stream are kept with their bytes (storetest RetentionCount, RetentionBytes, GetGeneration); DeleteStream removes all of a stream (storetest DeleteStream).
//   - Sinks, applied generations, convergences (storetest Converged) and the fingerprint key (storetest FingerprintKey) are kept, so a restart or another replica shows the same.
package store
