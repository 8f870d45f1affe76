// Package sinkspec owns a sink spec between the user's text and the engine:
// normalise (kind, default stream, the kind's defaults), validate (the
// proto's field rules through protovalidate, the rules across fields in
// Resolve, the kind's own Validate), and resolve into the engine's Options.
//
// Guarantees:
//   - Every field rule of sink.proto is enforced on every path (TestProtoRulesEnforced).
//   - An address with credentials is refused without quoting it (TestAddressWithoutCredentials).
//   - Cross-field rules: max_delay needs debounce, backoff.max >= initial (TestCrossFieldRules).
//   - A kind's defaults fill only unset options; the input is not changed (TestKindDefaults).
//   - The kind comes from the registry (TestKindResolution).
//   - Backoff grows to Max with jitter (TestBackoffDelay).
package sinkspec
