// Package etcdstatus is the status view of replicas sharing etcd: the Writer
// copies the owned statuses to etcd under the lease; the Mirror serves them
// all as a status.View numbered by etcd revisions and tells the engine.
//
// Guarantees (etcdstatus_test.go):
//   - The Mirror passes the status view conformance suite (TestConformance).
//   - Mirrors agree on revisions, so a watch resumes on any replica (TestMirrorsAgreeOnRevisions).
//   - A lost etcd watch is recovered with a "resume-gap" snapshot (TestMirrorRecoversAfterEtcdRestart).
//   - A replica without its lease writes nothing (TestWriterNeedsItsLease).
//   - Failed applies are copied and readable on any replica (TestFailedRecords; cluster TestFailedConfigOnEveryReplica).
package etcdstatus
