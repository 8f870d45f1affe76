// Package redact removes credentials from a Kong declarative configuration
// (and from a Kong Admin API error body) before it is shown for diagnostics
// (GetConfig), keeping the input's format and key order, and hides the
// secrets of sink specs.
//
// What is redacted (the value becomes "<redacted>"), wherever the collection
// appears (top level, under consumers, or as the entity of a flattened
// error):
//
//	keyauth_credentials   key
//	basicauth_credentials password
//	hmacauth_credentials  secret
//	jwt_secrets           secret          (rsa_public_key and key stay)
//	oauth2_credentials    client_secret
//	certificates          key, key_alt    (cert and cert_alt stay)
//	keys                  jwk, pem.private_key (pem.public_key stays)
//	services, upstreams   client_certificate.key, client_certificate.key_alt (inline)
//
// Every string is also scrubbed of those values (Kong quotes a duplicate
// key in its messages). Plugin configuration fields are not touched: which
// are secret depends on the plugin; keep plugin secrets in Kong vaults.
// Sink spec secrets are the fields marked (confighub.v1.secret) in
// sink.proto, shown as "<redacted:FP>" (an HMAC fingerprint).
//
// Guarantees:
//   - A key-auth credential's name, its key, is never named (TestNameIsSecret; clients/kong TestKeyAuthKeyNeverNamed).
//   - Fingerprints are stable per value and key (TestSinkSecretsFingerprint).
//   - Every sink secret is hidden and nothing else (TestSinkSecretsRedactEverySecret).
//   - Restore puts stored values back and refuses any other placeholder (TestSinkSecretsRestore, TestFindPlaceholder).
//   - Plugin and custom settings are secret by name (TestSecretName).
//   - Entity redacts one decoded entity the same way, for the entity diff (TestEntity).
package redact
