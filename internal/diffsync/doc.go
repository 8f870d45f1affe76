// Package diffsync is the entity diff-sync core shared by the "kong-db" and
// "konnect" sink kinds: it makes a Kong Admin API with a database, or a
// Konnect control plane, hold one declarative configuration, entity by
// entity, with go-database-reconciler (deck's engine) as the Kong Ingress
// Controller does.
//
// One Sync runs the reconciler's pipeline: dump the current entities
// (dump.Get, state.Get), read the configuration with the reconciler's own
// file reader (which validates it against deck's JSON schema), render the
// target state against the current one (file.Get, state.Get), diff, and
// apply the operations with a bounded number of concurrent requests
// (diff.NewSyncer, Solve).
//
// Guarantees:
//   - Only the operations of the diff are sent: a configuration equal to
//     what the destination holds sends no write; a one-entity change sends
//     the writes of that entity. This holds against a destination that
//     stores Kong 3.9's defaults and serves its schemas (the emulator):
//     for each of the 58 KIC golden configurations, in DB mode and on a
//     Konnect control plane, an unchanged resync sends 0 writes and a
//     one-route change exactly one PUT of that route
//     (TestEveryFixtureResyncsWithoutWrites; run it with -v for the table
//     of write counts).
//   - A controller's configuration is taken in Kong's DB-less spelling:
//     consumer_group_consumers become the consumers' groups and
//     degraphql_routes custom entities, as deck's file format spells them
//     (TestDBLessCollectionsReadAsDeck).
//   - A configuration the reconciler's reader rejects (schema validation,
//     e.g. a credential without its secret; unknown references) is a
//     Permanent *sink.Error with code "invalid" and the reconciler's
//     message, plus one EntityError per offending object (its tags and the
//     missing field); no entity request is sent for it
//     (TestCredentialsWithoutSecretsArePermanent).
//   - Errors of the destination map to *sink.Error: 429 -> RetryAfter from
//     the reconciler's error details (Retry-After); 401 and 403 ->
//     retryable "unauthorized" (credentials, not the configuration, are
//     wrong: a rotated token file or certificate recovers without a new
//     generation); any other 4xx -> Permanent "rejected" (the engine pins
//     the hash until a new generation); 5xx, connection errors and
//     timeouts -> retryable. When a
//     sync has several failed operations, one retryable failure makes the
//     whole apply retryable (the longest Retry-After wins)
//     (TestRateLimitedCarriesRetryAfter, TestUnavailableIsRetryable,
//     TestHungDestinationTimesOut).
//   - Every failed operation is reported as a confighubv1.EntityError with
//     the entity's kind, name, id and tags (KIC's k8s-* tags), so a
//     controller can mark its objects (TestRejectedEntityIsPermanentWithTags).
//   - WithDropConsumers removes consumers (with their credentials and
//     plugins) and plugins scoped to a consumer from the target, as KIC's
//     "disable consumers sync" does; consumers already at the destination
//     are therefore deleted (TestDropConsumers).
//   - The configuration bytes are shared and never modified. The reader
//     takes a file, so each sync writes the JSON form to a private temporary
//     file (mode 0600) that is removed before Sync returns; deck's "${{ }}"
//     environment templating is neutralised, so content is taken literally
//     and never reads the hub's environment (TestTempFileRemovedOnEveryPath,
//     TestTemplatesAreLiteral).
//
// Limits inherited from the reconciler: it retries an operation answered
// with 500 by itself (up to 4 times, about 40 s of backoff on its own
// clock); the per-attempt timeout of the sink bounds that.
package diffsync
