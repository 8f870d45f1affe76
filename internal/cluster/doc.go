// Package cluster runs confighub as several replicas on etcd: it owns the
// membership of the replicas, the partition of the sinks among them, and
// the status every replica serves. It implements hub.Fanout around the
// local engine, so the hub and the server are the same as on one node.
//
// How it works:
//   - Any replica accepts pushes: the hub commits to the shared etcd store,
//     whose transaction assigns the generation (so expected_generation holds
//     across replicas). Every replica follows the store's Watch and
//     publishes each new generation to its local engine, which ignores a
//     generation it already has.
//   - Each replica keeps <prefix>/members/<id> under a lease of --lease-ttl
//     (Membership) and watches every member's key. Sinks are placed on the
//     live members by rendezvous hashing (Owner); a replica runs engine
//     workers only for the sinks it owns. The sinks of a stream with gates
//     (waves, or konnect waiting for a gateway) are placed together, by the
//     stream's name, because the engine evaluates gates locally.
//   - The owner of a sink writes its latest SinkStatus to
//     <prefix>/status/<sink>, coalesced (at most once per interval, latest
//     wins). Every replica mirrors those keys: GetStatus and WatchStatus
//     answer from them with etcd revisions, so a controller connected to any
//     replica sees every sink and resumes on any replica.
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
//     stored applied generation and hash before it starts, so the hash skip
//     and resume hold across a handover (TestFanoutPartitionsAndMovesSinks).
//   - A sink this replica gives up while it still exists is logged as
//     "cluster: sink handed over ... to=<owner>" (or "sink released" when
//     this replica stops serving), never as "sink deleted"; lines do not
//     repeat the replica, which the logger names (TestHandOverIsLoggedAsSuch).
//   - During a handover two replicas may briefly apply the same sink (the
//     old owner has not yet noticed that its lease is gone). Applies are
//     idempotent: the same generation has the same bytes and hash, the hash
//     skip avoids a second apply where the state is known, and the kong
//     sink sends check_hash.
//   - A replica whose lease is gone cannot write statuses: status writes are
//     transactions conditional on its member key's lease.
//   - Status from any replica: GetStatus lists every stored sink of the
//     stream with its owner's latest status; WatchStatus sends a snapshot at
//     etcd revision R, then the changes from R+1; from a revision it
//     resumes with the changes after it, or a snapshot with reason
//     "resume-gap" when etcd compacted them; a watcher too slow for its
//     buffer gets a snapshot with reason "slow-watcher" and never blocks
//     anything else (TestFanoutPartitionsAndMovesSinks, TestWatchResumesAcrossReplicas,
//     TestSlowWatcherGetsSnapshot).
//   - Readiness: while a linearizable read of etcd fails the readiness
//     callback is told false (the command sets gRPC health NOT_SERVING) and
//     the guarded store fails every call at once (pushes get Unavailable);
//     it is told true when etcd answers again (TestGuardFailsFastWhenNotReady).
//
// Generation statuses on a replica are derived from the sinks' statuses
// (applied = sinks whose applied generation reached it); their converge
// time is approximate (the latest apply time among the sinks at that
// generation).
package cluster
