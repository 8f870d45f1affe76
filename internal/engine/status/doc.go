// Package status is the hub's status broker: each sink's newest status and the
// recent generations per stream, every change numbered by a monotonic revision
// and fanned out to watchers in rounds. Readers see a View: the local Broker, or
// etcdstatus.Mirror on replicas (statustest); messages handed out are read-only.
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
