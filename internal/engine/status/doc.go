// Package status is the status broker of the hub: a revisioned store of
// every sink's and every generation's status, per stream, with watchers.
//
// The engine computes statuses; the broker keeps the newest one of each sink
// and of the last generations of each stream, numbers every change with a
// monotonic revision, and fans the changes out to watchers from its
// dispatcher goroutine, in rounds (WithDispatchWindow; the engine uses 5 ms).
// Readers see a View (Snapshot, Watch): the local Broker in single-node mode,
// the etcd-backed etcdstatus.Mirror on replicas; both run one conformance
// suite, statustest.Run. Messages handed out are shared between watchers:
// read only; Encodings keeps each change's encoding, made once.
//
// Guarantees (broker_test.go; TestConformance/X is a subtest of the suite):
//   - Revisions are monotonic across streams, and start after WithFirstRevision (TestRevisionsAreMonotonic).
//   - A snapshot holds exactly the changes up to its revision (TestSnapshotIsConsistentWithEvents).
//   - Watch sends a snapshot, then changes in order (TestConformance/WatchSendsSnapshotThenChanges).
//   - Changes superseded within a round are left out; every generation is sent (TestRoundCoalescesChanges, TestCoalescedWatchMatchesEveryGeneration).
//   - Resume replays from a retained revision, else a "resume-gap" snapshot (TestConformance/WatchResumesFromRevision, TestConformance/WatchResumeGap).
//   - A slow watcher is cut over to a fresh snapshot, never waited for (TestConformance/SlowWatcherIsCutOver, TestManyWatchersOneStalled).
//   - A change costs its caller O(1) whatever the watchers (BenchmarkBrokerPut, BenchmarkBrokerFanout).
//   - Rounds batch changes (TestDispatchWindowBatchesChanges).
//   - sinks_applied never runs ahead of the sink statuses (TestGenerationNeverAheadOfSinks).
//   - A watcher's channel closes with its context or the broker (TestWatchClosesOnCancel).
//   - GapAt sends a "resume-gap" snapshot to watchers that missed changes (etcdstatus TestMirrorRecoversAfterEtcdRestart).
//   - Each change is encoded once for every watcher (TestEncodingsEncodeOnce).
package status
