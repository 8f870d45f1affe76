// Package etcdstatus is the status view of hub replicas sharing etcd: the
// Writer copies this replica's statuses from its engine's broker to etcd,
// the Mirror serves every replica's statuses from etcd as a status.View.
//
// Guarantees, each with its named test (etcdstatus_test.go):
//   - The Mirror is a status.View like the local broker: it passes the same
//     conformance suite (statustest.Run: snapshot, resume from a revision,
//     resume-gap, slow-watcher, close on cancel) with the Writer between
//     the broker and etcd (TestConformance).
//   - Revisions are etcd's, shifted to number the changes of one etcd
//     transaction in order, so two replicas' mirrors hand out the same
//     revision for the same change and a watch resumes on any replica
//     (TestMirrorsAgreeOnRevisions).
//   - A mirror whose etcd watch is lost (etcd restarted, history
//     compacted) reads the keys again and publishes the difference; a
//     watcher that has not seen it gets a snapshot with reason
//     "resume-gap" holding the newest statuses (TestMirrorRecoversAfterEtcdRestart).
//   - The Writer writes only what its Ownership owns (sinks run here,
//     generations of the streams led here), coalesced per interval, in
//     transactions conditional on the replica's lease: a replica that
//     lost its lease writes nothing (TestWriterNeedsItsLease).
//   - With WithFailures the Writer copies each owned sink's last failed
//     apply (generation, hash, error, raw body cut at MaxFailedBody) to a
//     failed record after the sink's status, replacing its older ones, and
//     deletes the records of generations the sink applied since; a new
//     owner keeps the record of a failure it did not see (the sink applied
//     nothing newer). Mirror.LastFailed reads the newest record on any
//     replica (TestFailedRecords; cluster TestFailedConfigOnEveryReplica).
package etcdstatus
