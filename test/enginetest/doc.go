// Package enginetest provides an in-process fake sink for tests of the
// engine and what is built on it (slow on a fake clock, hung, failing,
// panicking, blocked until released, recording what it applied), and the
// engine's conformance suite (Run), observed through the status view:
// internal/engine runs it on one engine, internal/cluster on two replicas
// over one etcd. The worker's timed decisions (backoff, pacing, timeouts)
// run on one engine only: they advance a fake clock, which etcd's round
// trips cannot follow; replicas run the same worker.
package enginetest
