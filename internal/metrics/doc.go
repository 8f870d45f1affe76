// Package metrics serves the hub's Prometheus metrics (engine, gRPC, Go and
// process) at /metrics from a private registry and, with WithProfiling, Go's
// profiles under /debug/pprof/; methods are concurrency-safe and do no I/O.
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
