// Package etcdstatus is the status view of hub replicas sharing etcd: the
// Writer copies this replica's statuses from its engine's broker to etcd
// (only what its Ownership owns, coalesced per interval, conditional on the
// replica's lease), the Mirror serves every replica's statuses from etcd as
// a status.View, with etcd's revisions, and tells its Observer (the engine)
// what the sinks run elsewhere did.
//
// Guarantees (etcdstatus_test.go):
//   - The Mirror passes the status view conformance suite (TestConformance).
//   - Mirrors agree on revisions, so a watch resumes on any replica (TestMirrorsAgreeOnRevisions).
//   - A lost etcd watch is recovered with a "resume-gap" snapshot (TestMirrorRecoversAfterEtcdRestart).
//   - A replica without its lease writes nothing (TestWriterNeedsItsLease).
//   - Failed applies are copied and readable on any replica (TestFailedRecords; cluster TestFailedConfigOnEveryReplica).
package etcdstatus
