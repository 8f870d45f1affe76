// Package cluster runs confighub as several replicas on etcd with the same
// engine path as one node: it keeps the membership of the replicas,
// places the sinks among them (the engine's ownership predicate), and
// follows the shared store into the local engine. The engine runs the
// sinks this replica owns; the status view is etcd's (etcdstatus).
//
// How it works:
//   - Any replica accepts pushes: the hub commits to the shared etcd store,
//     whose transaction assigns the generation (so expected_generation holds
//     across replicas). Every replica follows the store's Watch and
//     publishes each new generation to its local engine, which ignores a
//     generation it already has; sink specs go to the engine the same way.
//   - Each replica keeps <prefix>/members/<id> under a lease of --lease-ttl
//     (Membership) and watches every member's key. Placement is the
//     engine's Ownership: a sink runs on its rendezvous owner among the
//     live members ("sink/<name>"), a stream is led by the owner of
//     "stream/<name>" (Owner). Every sink is placed on its own, gated ones
//     included: the engine evaluates gates over the shared statuses.
//   - The engine's broker holds this replica's sinks' statuses (and the
//     peers' as etcd has them); an etcdstatus.Writer watching it writes
//     the owned sinks' statuses and the led streams' generation statuses
//     to etcd. The etcdstatus.Mirror reads every status back: it is the
//     status view GetStatus and WatchStatus serve on every replica, and it
//     tells the engine what the sinks run elsewhere did (ObserveSink).
//
// Guarantees:
//   - Stable, balanced, minimal placement: every replica computes the same
//     owner from the same member set; sinks spread evenly; when a member
//     leaves or joins only the sinks it held or wins move
//     (TestOwnerIsStable, TestAssignIsBalanced, TestAssignMovesMinimally).
//   - Membership: a replica sees the others join and leave; when its own
//     lease is lost it stops counting itself (and so stops all its workers
//     at once) and registers again with a new lease
//     (TestMembershipSeesJoinAndLeave, TestMembershipReRegistersAfterLeaseLoss).
//   - Every sink runs on exactly one live replica once membership settled,
//     and moves when its owner leaves; a gained sink is seeded with its
//     stored applied record or its last shared status, so the hash skip
//     holds across a handover (TestReplicasPartitionAndMoveSinks).
//   - The convergence metric counts each generation once summed over the
//     replicas, and GetStatus answers the same on every replica
//     (TestConvergenceCountedOnceAcrossReplicas). A replica that does not
//     lead a stream takes the leader's converge times from the shared view
//     (engine.ObserveGeneration), so when it takes the lead the times stay
//     and nothing is counted again; the leader records each convergence in
//     the etcd store, so a restarted replica shows it as observed
//     (TestConvergenceSurvivesTakeoverAndRestart). A generation that
//     converged while its leader was dying, before the leader's status
//     reached etcd, is counted by the replica that takes the lead (so
//     it may be counted twice if the dying leader had counted it, never
//     zero times).
//   - The status writer follows every stream the engine has (the engine
//     calls Replica.Follow, engine.WithNewStream), those of pushes and
//     sinks this replica accepted itself included: the store's Watch does
//     not report a replica's own writes (every test here pushes through
//     one replica and reads through another, with the etcd store in
//     TestConvergenceSurvivesTakeoverAndRestart).
//   - GetConfig of a sink, with failed or not, answers the same on every
//     replica, the owner included (Replica.Diagnostics, the hub's
//     Diagnostics port): the sink's failed record in etcd (its owner's
//     writer copies the engine's last failed apply), or its shared
//     status's applied generation, with that generation's bytes from the
//     etcd store, which keeps the last 8 generations of each stream; a
//     generation older than those is NotFound on every replica. One test
//     body runs on a single hub and on two replicas, asked on both: a
//     generation rejected, still the failed one while a newer is being
//     applied, none once the newer applied, and the applied one while a
//     newer is being applied (TestFailedConfigOnEveryReplica).
//   - A watch resumes on another replica from a revision of the first
//     (TestWatchResumesAcrossReplicas).
//   - The engine conformance suite that internal/engine runs on one
//     engine passes on two replicas over one etcd, read through a view
//     whose replica runs only some of the sinks (TestEngineConformance,
//     enginetest.Run); the status view conformance suite passes on the
//     etcd view (etcdstatus TestConformance, statustest.Run).
//   - A sink this replica gives up while it still exists is logged as
//     "sink handed over ... to=<owner>" (Placement names the owner), never
//     as "sink deleted"; lines do not repeat the replica, which the logger
//     names (TestHandOverIsLoggedAsSuch).
//   - During a handover two replicas may briefly apply the same sink (the
//     old owner has not yet noticed that its lease is gone). Applies are
//     idempotent: the same generation has the same bytes and hash, the hash
//     skip avoids a second apply where the state is known, and the kong
//     sink sends check_hash. A replica whose lease is gone cannot write
//     statuses: status writes are transactions conditional on its member
//     key's lease (etcdstatus.TestWriterNeedsItsLease).
//   - Readiness: while a linearizable read of etcd fails (bounded by
//     --etcd-op-timeout, default 2 s) the readiness callback is told false
//     (the command sets gRPC health NOT_SERVING) and the guarded store
//     fails every call at once (pushes get Unavailable); every call is
//     bounded by the same timeout, so a push in flight when etcd goes
//     fails after it, not after --lease-ttl; it is told true at the first
//     probe (every 500 ms) that etcd answers again
//     (TestGuardFailsFastWhenNotReady; test/e2e TestReplicasEtcdRestart).
package cluster
