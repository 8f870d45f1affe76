// Package kongdb is the "kong-db" sink: a Kong gateway with a database,
// synced entity by entity (internal/diffsync); it counts as a gateway.
package kongdb
