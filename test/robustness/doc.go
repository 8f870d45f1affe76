// Package robustness runs the shipped hub under a random, seeded mix of
// load and faults, records every request and answer, and checks the
// recorded history once the fleet settles (etcd's robustness tests are the
// model: traffic, failpoints, a history, validation).
//
// The fleet (driver.go): the confighub binary as a child process (bbolt in
// a temporary folder, fixed loopback ports), one kong sink per emulated
// gateway (test/kongemu, in-process, behind a recorder of every POST
// /config), pushers (raw PushConfig and hubclient's UploadConfig, with and
// without expected_generation, new, unchanged and gateway-rejected
// configurations), gateway faults at random (hang, 429 with Retry-After,
// 500, 400, dropped connection, slow answers, an emptied gateway),
// watchers that disconnect and resume from their last revision, and kill
// -9 and restart of the hub; in replica mode (-robustness.mode replica)
// two replicas on a real etcd server, with kills of a replica and restarts
// of etcd, and pushers and watchers spread over the replicas. Settling
// clears the faults, kills and restarts every hub once more, pushes once
// per stream, waits for every sink, and resumes every watcher once more.
//
// The checker (check.go) proves, and each check fails on a hand-made
// history that breaks it (TestCheckerCatchesEachBrokenInvariant) and on a
// real run's history with one recorded answer corrupted
// (-robustness.break, TestBreakCorruptsEachInvariant):
//   - durable: every acknowledged generation is readable after each
//     restart with the same hash;
//   - monotonic: per stream, generations strictly increase in real time
//     and none is given to two configurations;
//   - converged: every sink ends at its stream's last acknowledged
//     generation, or reports a permanent rejection of exactly it;
//   - in-order: no gateway loaded an older generation after a newer one;
//   - watch-exact: a resumed watch repeats no revision and misses no
//     generation another watcher got, and each watcher's view ends equal
//     to GetStatus;
//   - gateway-hash: each gateway's configuration_hash is that of the last
//     acknowledged configuration (the last applied one when it was
//     rejected).
//
// TestRobustness is the run: short in make test, longer with make
// robustness (SEED, DURATION, MODE, KILL_EVERY, BREAK). TestSoak (make soak)
// runs the mix without kills, samples the hub's RSS, Go heap, goroutines
// and open files every 10 s into soak.csv and soak.png (soak.go) and
// requires each to be flat over the last two thirds.
package robustness
