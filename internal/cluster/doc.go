// Package cluster runs confighub as several replicas on etcd with the engine
// path of one node. Any replica accepts pushes (the etcd store's transaction
// assigns the generation) and follows the store's Watch into its engine.
// Each replica keeps <prefix>/members/<id> under a lease (Membership); a sink
// runs on its rendezvous owner among the live members, a stream is led by
// the owner of "stream/<name>", a Kong data plane's sink runs where it is
// connected (claims.go). An etcdstatus.Writer copies the owned statuses to
// etcd; the etcdstatus.Mirror reads them all back as the view every replica
// serves. During a handover two replicas may briefly apply the same sink:
// applies are idempotent (hash skip, check_hash), and a replica without its
// lease cannot write statuses.
//
// Guarantees:
//   - Stable, balanced, minimal placement (TestOwnerIsStable, TestAssignIsBalanced, TestAssignMovesMinimally).
//   - Membership sees joins and leaves, and re-registers after a lost lease (TestMembershipSeesJoinAndLeave, TestMembershipReRegistersAfterLeaseLoss).
//   - Every sink runs on exactly one live replica and moves with the hash skip kept (TestReplicasPartitionAndMoveSinks).
//   - A data plane's sink runs where it connected, moves with a newer claim, falls back to rendezvous when its replica leaves, and is purged everywhere at once (TestDataPlanesOwnedByConnection, TestClaimsFollowTheNewestRevision; e2e TestReplicasHybridTakeover).
//   - Each generation's convergence counts once over replicas and survives a takeover (TestConvergenceCountedOnceAcrossReplicas, TestConvergenceSurvivesTakeoverAndRestart).
//   - GetConfig of a sink answers the same on every replica (TestFailedConfigOnEveryReplica).
//   - A watch resumes on another replica (TestWatchResumesAcrossReplicas).
//   - The engine conformance suite passes on two replicas (TestEngineConformance).
//   - A sink given up is logged as handed over, never deleted (TestHandOverIsLoggedAsSuch).
//   - A replica without its lease cannot write statuses (etcdstatus TestWriterNeedsItsLease).
//   - While etcd does not answer, readiness is false and the store fails fast (TestGuardFailsFastWhenNotReady; e2e TestReplicasEtcdRestart).
package cluster
