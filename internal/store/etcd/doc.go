// Package etcd is the shared store.Store for hub replicas: every replica
// commits to the same etcd cluster, so generations and expected_generation
// hold across replicas.
//
// Layout under the prefix (default "/confighub/"):
//
//	streams/<stream>                       JSON meta: generation, hash, format, size, labels, accept time, chunks
//	history/<stream>/<gen%020d>            JSON meta of each kept generation (the current one included)
//	configs/<stream>/<gen%020d>-<token>/<n%06d>  config bytes, in chunks of at most 1 MiB (WithChunkSize)
//	sinks/<sink>                           sink spec, proto binary
//	applied/<sink>                         JSON applied record
//	converged/<stream>                     JSON convergence record: generation, time
//
// etcd refuses requests above its --max-request-bytes (1.5 MiB by default),
// so a larger config is written chunk by chunk under a prefix unique to the
// attempt, and the transaction that writes the meta makes it current; the
// server's limit must exceed the chunk size by a margin (64 KiB is plenty).
// Every push adds its size to etcd's history until compaction, and the retained
// generations stay (up to 50 configs and 1 GiB per stream by default): run etcd with
// --auto-compaction-retention and a --quota-backend-bytes that fits, and for
// large configs a lower --snapshot-count (docs/deploy.md).
//
// Guarantees:
//   - CommitConfig returns after its transaction committed; two replicas never hand out one generation (TestReplicasShareGenerations).
//   - Watch reports other replicas' changes in order, misses nothing after a list, and resyncs after compaction (TestWatchOtherReplica, TestWatchAfterListHasNoGap, TestWatchResyncsAfterCompaction, TestWatchResyncReportsSinksDeletedInTheGap).
//   - The retained generations (WithRetention) are readable from any replica; another is store.ErrNotRetained naming the range (storetest GetGeneration, TestKeepsTheLastGenerations).
//   - The store passes the conformance suite, convergence records included (TestConformance).
package etcd
