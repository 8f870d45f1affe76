// Package konnect is the "konnect" sink: a Kong Konnect control plane,
// synced entity by entity as KIC does (internal/diffsync). It authenticates
// with a client certificate or a bearer token (token_file re-read before
// every apply); its defaults are KIC's.
package konnect
