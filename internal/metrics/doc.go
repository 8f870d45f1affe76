// Package metrics owns the hub's Prometheus metrics: the engine's
// measurements (engine.Metrics, as confighub_* series in base units), the
// gRPC server metrics of go-grpc-middleware's prometheus provider, and the Go
// and process collectors, all on a private registry, served at /metrics.
// With WithProfiling (--profiling) the same listener serves Go's profiles
// under /debug/pprof/ on its own mux. Every method is safe for concurrent
// use and does no I/O (the engine calls some under its lock).
// docs/metrics.md lists every series (test/docs TestMetricsDocumented).
//
// Guarantees:
//   - A deleted sink's series go; a kind change drops the old kind's (TestEngineWiring, TestKindChange).
//   - confighub_sink_state has exactly one state at 1 per sink (TestSeries).
//   - A restored last success is exported at once (TestRestoredLastSuccess).
//   - Without WithProfiling nothing is served under /debug/pprof/ (TestProfilingOff, cmd/confighub TestProfilingWired).
//   - Profiles are served in pprof's formats (TestProfilesServed).
//   - Profiles need the admin role; refusals are logged without the token (TestProfilingAuth).
//   - seconds is bounded and checked before anything runs (TestProfileSecondsBounded).
//   - One CPU profile or trace at a time, others 409 (TestOneCPUProfileAtATime).
//   - Running profiles end with the base context (TestProfilesEndWithBaseContext).
//   - Block and mutex profiles stay off (TestBlockAndMutexProfilesOff).
package metrics
