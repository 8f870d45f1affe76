// Package metrics owns the hub's Prometheus metrics: the engine's
// measurements (engine.Metrics, as confighub_* series in base units), the
// gRPC server metrics of go-grpc-middleware's prometheus provider, and the
// Go and process collectors, all on a private registry (never the global
// default one), served over HTTP at /metrics. With WithProfiling (the
// hub's --profiling) the same listener serves Go's profiles under
// /debug/pprof/: net/http/pprof's handlers registered one by one on the
// listener's own mux (never http.DefaultServeMux, which nothing in the hub
// serves).
//
// Guarantees:
//   - Every series a deleted sink had is removed (engine.Metrics.SinkRemoved),
//     and a sink put again with another kind loses its old kind's series
//     (TestEngineWiring, TestKindChange).
//   - confighub_sink_state has one series per state for each sink, exactly
//     one of them 1 (TestSeries).
//   - After a restart, confighub_sink_last_success_timestamp_seconds of a
//     sink is its restored last success from the moment the sink starts,
//     before any apply (TestRestoredLastSuccess).
//   - Every method is safe for concurrent use and does no I/O (the engine
//     calls some of them under its lock).
//   - Without WithProfiling nothing is served under /debug/pprof/ (404;
//     TestProfilingOff, cmd/confighub TestProfilingWired). With it: the
//     index, cmdline, symbol, trace and the NamedProfiles, as pprof's
//     formats (TestProfilesServed), and profile, a CPU profile in pprof's
//     format (TestOneCPUProfileAtATime).
//   - With a token checker every profile needs the admin role: no or an
//     unknown token 401, a lower role 403, as the status page answers
//     (auth.Authenticator.CheckRequest); refusals are logged without the token,
//     and a CPU profile's or trace's start with the token's name, never the
//     token (TestProfilingAuth).
//   - A seconds parameter over MaxProfileSeconds, or not a positive number
//     (a whole one for profile and the named profiles), is refused with
//     400 before anything runs (TestProfileSecondsBounded).
//   - One CPU profile or trace runs at a time; another one meanwhile gets
//     409 Conflict, and the next after it ends is served
//     (TestOneCPUProfileAtATime).
//   - A running CPU profile, trace or delta profile ends when the context
//     of WithBaseContext ends, so Shutdown after it does not wait for it
//     (TestProfilesEndWithBaseContext).
//   - The block and mutex profiles stay empty: nothing here sets their
//     sampling rates, whose cost every contended lock and channel
//     operation would pay (TestBlockAndMutexProfilesOff).
//
// docs/metrics.md lists every series with its labels and meaning (test/docs
// TestMetricsDocumented).
package metrics
