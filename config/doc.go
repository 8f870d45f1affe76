// Package config owns one Kong declarative configuration as the hub holds
// it: the bytes as pushed, their SHA-256, the stream's generation, and the
// checks that run before a push is acknowledged.
//
// The acknowledgement path must not decode a JSON configuration into Go
// values (docs/performance.md, scenario 1): Check runs a fast well-formedness pass
// (Valid: encoding/json.Valid's contract, skipping string bytes eight at a
// time) and reads _format_version with gjson. YAML must be parsed to be checked, so
// Check converts it to JSON once, there, and the Config keeps that JSON for
// every sink to share. The YAML form of a JSON push is likewise made once,
// on first use (YAML), and shared.
//
// A Config is immutable once built and is shared by every sink of its
// stream: sinks must never modify Raw or the bytes JSON and YAML return.
package config
