// Package diffsync is the entity diff-sync core shared by the "kong-db" and
// "konnect" sink kinds: it makes a Kong Admin API with a database, or a
// Konnect control plane, hold one declarative configuration, entity by
// entity, with go-database-reconciler (deck's engine) as the Kong Ingress
// Controller does.
//
// One Sync runs the reconciler's pipeline: dump the current entities, read
// the configuration with the reconciler's own file reader (which validates
// it against deck's JSON schema), render the target state, diff, and apply
// the operations with bounded concurrency. The reader takes a file, so each
// sync writes the JSON form to a private temporary file (mode 0600) removed
// before Sync returns. The reconciler retries a 500 by itself (up to 4
// times); the sink's per-attempt timeout bounds that.
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
