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
// A config above one chunk (etcd refuses requests above --max-request-bytes)
// is written under a prefix unique to the attempt before the transaction that
// makes its meta current. Run etcd with --auto-compaction-retention and a
// --quota-backend-bytes that fits the retained generations (docs/deploy.md).
//
//   - Two replicas never hand out one generation (TestReplicasShareGenerations).
//   - Watch reports other replicas' changes in order, misses nothing after a list, and resyncs after compaction (TestWatchOtherReplica, TestWatchAfterListHasNoGap, TestWatchResyncsAfterCompaction, TestWatchResyncReportsSinksDeletedInTheGap).
//   - The retained generations are readable from any replica; another is store.ErrNotRetained naming the range (storetest GetGeneration, TestKeepsTheLastGenerations).
//   - The store passes the conformance suite (TestConformance).
package etcd
