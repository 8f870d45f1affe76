// Package redact removes credentials from a Kong declarative configuration
// or Admin API error body shown for diagnostics (GetConfig), keeping format
// and key order, and hides the secrets of sink specs. These values become
// "<redacted>" wherever the collection appears (top level, under consumers,
// as a flattened error's entity), and every string is scrubbed of them:
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
// Plugin fields are not touched (keep plugin secrets in Kong vaults). Sink
// spec secrets, the fields marked (confighub.v1.secret), show as
// "<redacted:FP>" (an HMAC fingerprint).
//
// Guarantees:
//   - A key-auth credential's name, its key, is never named (TestNameIsSecret; clients/kong TestKeyAuthKeyNeverNamed).
//   - Fingerprints are stable per value and key (TestSinkSecretsFingerprint).
//   - Every sink secret is hidden and nothing else (TestSinkSecretsRedactEverySecret).
//   - Restore puts stored values back and refuses any other placeholder (TestSinkSecretsRestore, TestFindPlaceholder).
//   - Plugin and custom settings are secret by name (TestSecretName).
//   - Entity redacts one decoded entity the same way, for the entity diff (TestEntity).
package redact
