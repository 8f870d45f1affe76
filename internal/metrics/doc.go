// Package metrics owns the hub's Prometheus metrics: the engine's
// measurements (engine.Metrics, as confighub_* series in base units), the
// gRPC server metrics of go-grpc-middleware's prometheus provider, and the
// Go and process collectors, all on a private registry (never the global
// default one), served over HTTP at /metrics.
//
// Guarantees:
//   - Every series a deleted sink had is removed (engine.Metrics.SinkRemoved),
//     and a sink put again with another kind loses its old kind's series
//     (TestEngineWiring, TestKindChange).
//   - confighub_sink_state has one series per state for each sink, exactly
//     one of them 1 (TestSeries).
//   - Every method is safe for concurrent use and does no I/O (the engine
//     calls some of them under its lock).
//
// docs/metrics.md lists every series with its labels and meaning (test/docs
// TestMetricsDocumented).
package metrics
