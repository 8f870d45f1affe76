// Package e2e holds the end-to-end tests: real hub processes built from
// cmd/, driven by the real grpcurl binary and the Go client, with emulated
// Kong gateways and plugins as real servers on loopback.
package e2e
