// Package konnect is the built-in "konnect" sink: a Kong Konnect control
// plane, synced entity by entity with go-database-reconciler as the Kong
// Ingress Controller does (see internal/diffsync for the pipeline and its
// guarantees).
//
// Spec (KonnectSpec): address (default https://us.kic.api.konghq.com),
// control_plane_id (required; the Admin API is
// <address>/kic/api/control-planes/<id>), authentication by an mTLS client
// certificate (tls.cert_pem/key_pem or cert_file/key_file) or a bearer
// token (token, or token_file re-read before every apply so a rotated token
// is picked up), concurrency (default 4), drop_consumers. TLS
// insecure_skip_verify is honoured only when set, with a warning logged.
//
// Options: the kind's defaults are min_interval 30s (KIC's upload period),
// GATE_ANY_GATEWAY (a generation reaches Konnect once a gateway of the
// stream applied it), timeout 120s; a min_interval below 10s is rejected.
// Konnect's 429 Retry-After is honoured and a 4xx pins the hash until a new
// generation (see diffsync).
//
// Register it with Register(registry).
package konnect
