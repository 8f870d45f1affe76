// Package etcd is the shared store.Store for hub replicas: every replica
// commits to the same etcd cluster, so generations and expected_generation
// hold across replicas.
//
// Guarantees:
//   - CommitConfig returns only after its etcd transaction committed (raft
//     quorum, WAL fsynced). The transaction compares the stream's meta key
//     with the mod revision read just before, so two replicas never hand out
//     the same generation: the loser re-reads and either retries (no
//     expected generation) or gets store.ErrConflict
//     (TestReplicasShareGenerations).
//   - Readers see one consistent revision: a stream's meta and its config
//     chunks are read at the same revision.
//   - Watch reports every change made by other Store values (other
//     replicas): new stream generations (with their bytes) and sink puts and
//     deletes, in commit order. Changes made through this Store value are not
//     reported (the caller knows them). Watch starts after the revision of
//     the last ListStreams/ListSinks call on this Store, so list-then-watch
//     misses nothing. If the etcd history it needs was compacted, it sends
//     every stream and sink again and continues (TestWatchOtherReplica,
//     TestWatchAfterListHasNoGap, TestWatchResyncsAfterCompaction,
//     TestWatchResyncReportsSinksDeletedInTheGap).
//   - The bytes of each stream's retained generations are kept
//     (WithRetention; the current one always): GetGeneration reads
//     any of them from any replica, at one revision with its meta, and
//     answers store.ErrNotRetained, naming the range, for another one; the commit
//     that makes a generation current deletes the chunks and meta of the
//     one that falls out, and of other attempts at its own generation
//     (storetest GetGeneration; TestKeepsTheLastGenerations). A replica
//     reads there the configuration a sink failed on another replica
//     (cluster TestFailedConfigOnEveryReplica).
//   - Each stream's last convergence is kept (store.ConvergedStore, one key
//     per stream, overwritten by the stream's leader): a restarted replica
//     shows the time the leader observed and does not observe it again
//     (storetest Converged and PersistsAcrossReopen, run by TestConformance;
//     cluster TestConvergenceSurvivesTakeoverAndRestart).
//
// Layout under the prefix (default "/confighub/"):
//
//	streams/<stream>                       JSON meta: generation, hash, format, size, labels, accept time, chunk prefix and count
//	history/<stream>/<gen%020d>            JSON meta of each kept generation (the current one included)
//	configs/<stream>/<gen%020d>-<token>/<n%06d>  config bytes, in chunks
//	sinks/<sink>                           sink spec, proto binary
//	applied/<sink>                         JSON applied record
//	converged/<stream>                     JSON convergence record: generation, time
//
// Large configs: etcd refuses requests above its --max-request-bytes
// (1.5 MiB by default), so config bytes are split into chunks of at most
// 1 MiB (WithChunkSize). A config of at most one chunk is written in the
// same transaction as its meta. A larger one is first written chunk by
// chunk under a prefix unique to this attempt (generation-to-be plus a
// random token), then the transaction that writes the meta makes it
// current. That transaction also deletes the chunks of the generations no
// longer kept and of the attempts at its own generation that lost or
// crashed (a crashed attempt at an older kept generation goes when that
// generation does). A lost race deletes its own staged chunks. The etcd server's --max-request-bytes must exceed the
// chunk size by a margin (64 KiB is plenty).
//
// Operations note: every push adds its size to etcd's history until
// compaction, and the kept generations stay (up to 50 configs and 1 GiB per
// stream by default). Run etcd with --auto-compaction-retention and a
// --quota-backend-bytes that fits (pushes between compactions x config
// size); etcd's default quota is 2 GiB. etcd also keeps recent raft
// entries in memory (up to --snapshot-count, default 10,000, plus 5,000
// for catch-up); with 1 MiB chunks that is up to GBs, so for large
// configs lower --snapshot-count (a few hundred). A 20 MiB commit costs
// about 0.4-0.6 s on the benchmark machine against an embedded etcd (see
// BenchmarkCommit), against about 15 ms for the bolt store: replicas trade
// ack latency for availability.
package etcd
