// Package enginetest provides an in-process fake sink for tests of the
// engine and of anything built on it (the hub, e2e tests): a kind whose
// sinks can be made slow (on a fake clock), hung, failing, panicking or
// blocked until released, and that record what they applied.
//
// It is also the engine's conformance suite (Run): behaviour that must
// hold in both modes, observed through the status view as a client sees
// it: the newest generation converges and is observed converged once
// over all engines, a permanent rejection leaves the sink FAILED and a new
// generation is tried at once, a generation rejected by a lower wave
// never reaches the later waves, a deleted sink's status goes, a watch
// resumes from a revision with the changes. internal/engine's
// TestEngineConformance runs it on one engine; internal/cluster's
// TestEngineConformance on two replicas over one etcd (each engine with
// the rendezvous placement as its ownership predicate, statuses through
// the etcd writer and mirror, the etcd store shared), reading through the
// view of a replica that runs only some of the sinks.
//
// What runs in one mode only, and why: the guarantee tests of the
// worker's decisions (backoff, Retry-After, pacing, debounce, timeouts,
// apply slots, hash skip, redaction and bounds of errors; engine_test.go)
// advance a fake clock and run on one engine. A replica runs the same
// engine and worker for the sinks it owns (only the set of sinks differs),
// and the etcd round trips of replica mode take real time, which a fake
// clock cannot advance. The statuses those decisions produce reach
// clients through the view, which statustest.Run checks on both backends.
// On replicas a generation's counts are written by the stream's leader,
// so they may come a writer interval (100 ms) after the sink statuses
// they count; the suite waits for both.
package enginetest
