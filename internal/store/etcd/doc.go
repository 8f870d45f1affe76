// Package etcd is the shared store.Store for hub replicas: every replica
// commits to the same etcd cluster, so generations and expected_generation
// hold across replicas.
//
// Layout under the prefix (default "/confighub/"):
//
//	streams/<stream>                       JSON meta of the current generation (store.Meta and its chunks)
//	history/<stream>/<gen%020d>            JSON meta of each kept generation (the current one included)
//	configs/<stream>/<gen%020d>-<token>/<n%06d>  config bytes, in chunks of at most 1 MiB (WithChunkSize)
//	sinks/<sink>, applied/<sink>, converged/<stream>  sink spec (proto), JSON applied and convergence records
//
// etcd refuses requests above its --max-request-bytes (1.5 MiB by default,
// which must exceed the chunk size by a margin), so a larger config is
// written chunk by chunk under a prefix unique to the attempt, and the
// transaction that writes the meta makes it current. Pushes and retained
// generations fill etcd: run it with --auto-compaction-retention, a
// --quota-backend-bytes that fits, and for large configs a lower
// --snapshot-count (docs/deploy.md).
//
// Guarantees:
//   - CommitConfig returns after its transaction committed; two replicas never hand out one generation (TestReplicasShareGenerations).
//   - Watch reports other replicas' changes in order, misses nothing after a list, and resyncs after compaction (TestWatchOtherReplica, TestWatchAfterListHasNoGap, TestWatchResyncsAfterCompaction, TestWatchResyncReportsSinksDeletedInTheGap).
//   - The retained generations (WithRetention) are readable from any replica; another is store.ErrNotRetained naming the range (storetest GetGeneration, TestKeepsTheLastGenerations).
//   - The store passes the conformance suite, convergence records included (TestConformance).
package etcd
