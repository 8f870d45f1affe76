// Package redact removes credentials from a Kong declarative configuration
// (and from a Kong Admin API error body) before it is shown for
// diagnostics (GetConfig). The output keeps the input's format (JSON stays
// JSON, YAML stays YAML) and its key order.
//
// What is redacted (the value becomes "<redacted>"), wherever the
// collection appears: at the top level, nested under consumers, or as the
// "entity" of one of Kong's flattened errors (matched by entity_type):
//
//	keyauth_credentials   key
//	basicauth_credentials password
//	hmacauth_credentials  secret
//	jwt_secrets           secret          (rsa_public_key and key, the JWT issuer, stay)
//	oauth2_credentials    client_secret
//	certificates          key, key_alt    (cert and cert_alt stay)
//	keys                  jwk, pem.private_key (pem.public_key stays)
//	services, upstreams   client_certificate.key, client_certificate.key_alt (inline)
//
// Kong's error messages quote the value of a duplicate unique field, which
// for key-auth is the key itself ("uniqueness violation:
// 'keyauth_credentials' entity with key set to '...' already declared"):
// every string is scrubbed of those values (Message does it for one
// string, for error texts shown or logged elsewhere).
//
// A key-auth credential's name is its key: NameIsSecret says so, and the
// kong sink leaves that name out of entity errors and excluded entities
// (TestNameIsSecret; TestKeyAuthKeyNeverNamed in clients/kong).
//
// Entity redacts one decoded entity the same way (TestEntity), for the
// entity diff.
//
// ca_certificates hold no private key and stay. Plugin configuration
// fields are not touched: which of them are secret depends on the plugin,
// and guessing would both miss some and hide useful ones; keep plugin
// secrets in Kong vaults ({vault://...} references), which are not secrets
// themselves.
//
// Sink specs (SinkSecrets): the fields marked (confighub.v1.secret) in
// sink.proto are the one description of what is secret; the code walks
// the spec by reflection and has no list of its own. A secret shows as
// "<redacted:FP>", FP 12 hex digits of HMAC-SHA256(key, value): equal
// values show equal placeholders, other values or another key other ones
// (TestSinkSecretsFingerprint); every secret of every kind is hidden and
// nothing else (TestSinkSecretsRedactEverySecret). Restore puts the stored
// value back for a placeholder with its fingerprint, and refuses one that
// matches nothing stored, the bare "<redacted>", or any other
// "<redacted...>" (a mistyped fingerprint), with ErrPlaceholder naming the
// field, so none is ever stored as a value (TestSinkSecretsRestore);
// FindPlaceholder finds any of them in a spec that must hold values
// (TestFindPlaceholder). Plugin and custom
// settings are secret by name (SecretName, TestSecretName).
package redact
