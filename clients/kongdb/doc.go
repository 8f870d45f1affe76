// Package kongdb is the built-in "kong-db" sink: a Kong gateway that runs
// with a database, synced entity by entity with go-database-reconciler
// (internal/diffsync has the pipeline and its guarantees). Its spec,
// KongDBSpec, takes the Admin API address, TLS, headers (Kong-Admin-Token),
// a concurrency (default 10) and a workspace; it counts as a gateway for
// GATE_ANY_GATEWAY. Register it with Register(registry).
package kongdb
