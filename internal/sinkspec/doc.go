// Package sinkspec owns a sink spec between the user's text and the
// engine: normalise (the kind, from the registry; the default stream; the
// kind's own defaults, which live with the kind's Register), validate (the
// proto's field rules through protovalidate, the one place a range or a
// pattern is written; the rules across fields beside them, in Resolve; the
// kind's own Validate), and resolve into the Options the engine runs a sink
// with (engine-wide defaults filled).
//
// Guarantees:
//   - Every field rule of sink.proto is enforced on every path (PutSink and
//     the sinks file): a name, stream, wave, timeout or backoff outside its
//     range is refused with sink.ErrInvalidSpec naming the sink and the field
//     (TestProtoRulesEnforced).
//   - A kong, kong_db or konnect address with credentials
//     (user:password@host) is refused without quoting it: credentials go in
//     the fields marked secret, which are write-only
//     (TestAddressWithoutCredentials).
//   - Cross-field rules: max_delay needs debounce and is at least it;
//     backoff.max is at least backoff.initial (TestCrossFieldRules).
//   - A kind's defaults fill only unset options, and the spec passed in is
//     never changed (TestKindDefaults).
//   - The kind comes from the registry: a spec of one kind under another
//     kind's name, or an unregistered kind, is refused (TestKindResolution).
//   - Backoff.Delay grows by the multiplier up to Max, with jitter inside
//     ±Jitter (TestBackoffDelay).
package sinkspec
