// Package diffsync is the entity diff-sync core of the "kong-db" and
// "konnect" sink kinds: it makes a Kong Admin API with a database, or a
// Konnect control plane, hold one declarative configuration, entity by
// entity, with go-database-reconciler (deck's engine) as KIC does: dump,
// read and validate (through a private temporary file), render, diff, apply.
//
// Guarantees:
//   - Only the diff's operations are sent: for each KIC golden configuration an unchanged resync sends 0 writes and a one-route change one PUT (TestEveryFixtureResyncsWithoutWrites).
//   - Kong's DB-less spellings are read as deck's (TestDBLessCollectionsReadAsDeck).
//   - A configuration the reader rejects is Permanent "invalid" with entity errors, and sends nothing (TestCredentialsWithoutSecretsArePermanent).
//   - 429 carries Retry-After; 401/403 are retryable; 5xx and timeouts retried; other 4xx permanent (TestRateLimitedCarriesRetryAfter, TestUnavailableIsRetryable, TestHungDestinationTimesOut).
//   - Every failed operation is an entity error with its tags (TestRejectedEntityIsPermanentWithTags).
//   - Options.DropConsumers removes consumers as KIC does (TestDropConsumers).
//   - The temporary file goes on every path; "${{ }}" templates are literal (TestTempFileRemovedOnEveryPath, TestTemplatesAreLiteral).
package diffsync
