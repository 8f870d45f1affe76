// Package status is the status broker of the hub: a revisioned store of
// every sink's and every generation's status, per stream, with watchers.
//
// The engine computes statuses; the broker keeps the newest one of each
// sink and of the last generations of each stream, numbers every change
// with a monotonic revision, and fans the changes out to watchers.
//
// Readers see a View (Snapshot, Watch): the local Broker in single-node
// mode, the etcd-backed etcdstatus.Mirror on replicas. Both run one
// conformance suite, statustest.Run (TestConformance here and in
// etcdstatus), which checks the snapshot, watch, resume, resume-gap,
// slow-watcher and cancel guarantees below.
//
// Guarantees (each has a named test in broker_test.go; TestConformance/X
// is the subtest X of the conformance suite):
//
//   - Every change (PutSink, RemoveSink, PutGeneration) gets a revision one
//     higher than the previous change of any stream
//     (TestRevisionsAreMonotonic). With WithFirstRevision(rev) the first
//     change gets rev+1 and a resume from below rev gets a snapshot; the
//     engine passes its clock's Unix nanoseconds at start, so revisions of
//     an earlier run are never mistaken for this run's.
//
//   - Snapshot is consistent: it holds exactly the changes up to its
//     revision (TestSnapshotIsConsistentWithEvents).
//
//   - Watch sends a snapshot (reason "start"), then the changes of the
//     stream in revision order (TestConformance/WatchSendsSnapshotThenChanges).
//     Of the changes that reach the watchers in one round of the
//     dispatcher, a generation change superseded by a later change of the
//     same generation, and a sink change superseded by a later change of
//     the same sink before the next generation change sent, are left out
//     (their revisions are skipped): every generation is sent, the
//     watcher's view (its snapshot and the changes it got) equals the
//     broker's state at each generation change it gets and at the end of
//     each round, and a push's APPLYING and APPLIED of each sink and its
//     count updates, made within a round, cost each watcher one message
//     per sink and one per generation (TestRoundCoalescesChanges,
//     TestCoalescedWatchMatchesEveryGeneration). A resume from a revision
//     replays the history as it was made.
//
//   - Watch from a revision still in the history replays the changes after
//     it without a snapshot (TestConformance/WatchResumesFromRevision); otherwise it
//     sends a snapshot with reason "resume-gap" (TestConformance/WatchResumeGap).
//
//   - A watcher whose buffer is full is never waited for: its pending
//     changes are dropped and it gets a fresh snapshot with reason
//     "slow-watcher" (etcd's victim pattern), while other watchers get
//     every change (TestConformance/SlowWatcherIsCutOver,
//     TestManyWatchersOneStalled).
//
//   - A change costs its caller O(1) whatever the number of watchers: the
//     fan-out runs in the broker's dispatcher goroutine, which batches the
//     changes of the history since its last round (BenchmarkBrokerPut,
//     BenchmarkBrokerFanout).
//
//   - With WithDispatchWindow(d) the fan-out runs in rounds: a change
//     reaches the watchers d after the first change of its round, with
//     every change made meanwhile, in order, coalesced as above
//     (TestDispatchWindowBatchesChanges). The engine uses 5 ms.
//
//   - A generation's sinks_applied never runs ahead of the sink statuses
//     that make it up: a count larger than the sinks whose published status
//     has applied the generation is held (PutGeneration returns 0) and
//     published right after the PutSink that catches up, for watchers and
//     snapshots alike (TestGenerationNeverAheadOfSinks; over the real hub
//     and client, hubclienttest.TestWatchNeverCountsAheadOfSinks).
//
//   - A watcher's channel is closed when its context ends or the broker is
//     closed, and its goroutine exits (TestWatchClosesOnCancel, goleak).
//
//   - PutSinkAt, RemoveSinkAt and PutGenerationAt take the revision from
//     the caller (a mirror numbers changes as etcd does); GapAt(rev) says
//     changes before rev may be missing: every watcher that has not seen
//     rev gets a snapshot with reason "resume-gap", as does a resume from
//     below it (etcdstatus.TestMirrorRecoversAfterEtcdRestart).
//
// Messages handed out (snapshots, events, statuses) are shared between
// watchers: read only. So a change can be encoded once for all the
// watchers that send it: Encodings keeps the latest changes' encodings
// (gRPC's WatchStatus and the status page use it), made once even when
// many watchers ask at once (TestEncodingsEncodeOnce).
package status
