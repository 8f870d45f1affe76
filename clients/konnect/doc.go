// Package konnect is the built-in "konnect" sink: a Kong Konnect control
// plane, synced entity by entity with go-database-reconciler as the Kong
// Ingress Controller does (internal/diffsync has the pipeline and its
// guarantees). It authenticates with an mTLS client certificate or a
// bearer token (token_file is re-read before every apply, so a rotated
// token is picked up). The kind's defaults are KIC's: min_interval 30s
// (below 10s is refused), GATE_ANY_GATEWAY, timeout 120s, concurrency 4.
// Register it with Register(registry).
package konnect
