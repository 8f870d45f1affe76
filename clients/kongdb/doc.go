// Package kongdb is the built-in "kong-db" sink: a Kong gateway that runs
// with a database, synced entity by entity with go-database-reconciler (see
// internal/diffsync for the pipeline and its guarantees).
//
// Spec (KongDBSpec): address (Admin API URL, required), tls (custom CA,
// client certificate; insecure_skip_verify only when set, with a warning
// logged), headers (e.g. Kong-Admin-Token), concurrency
// (default 10 concurrent entity operations), workspace (Kong Enterprise).
//
// The sink counts as a gateway for GATE_ANY_GATEWAY and reports per-entity
// errors. The factory does no network I/O; TLS files are read when the sink
// is created.
//
// Register it with Register(registry).
package kongdb
