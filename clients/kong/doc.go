// Package kong is the "kong" sink kind: one DB-less Kong gateway, configured
// with POST /config; with ON_REJECT_FALLBACK a rejection is followed by a
// fallback (docs/fallback.md); a GET /status poll resyncs a restarted gateway.
//
// Guarantees:
//   - 201 and 304 are success (TestApply201Then304).
//   - 400 is a permanent rejection with Kong's flattened errors as entity errors, tags included (TestApply400EntityErrorsWithTags, TestApply400DanglingReferences).
//   - 413 is permanent "too-large" naming the size (TestApply413TooLarge, TestApply413LargeBody).
//   - 429 honours Retry-After, seconds or date (TestApply429RetryAfter).
//   - 504 and timeouts are "timeout"; 5xx and dropped connections "unavailable", both retried (TestApplyTimeoutOnHungGateway, TestApply5xxAndDropsAreRetryable, TestApplyConnectionRefused).
//   - 401/403 are "unauthorized", retried (TestApplyUnauthorizedIsRetryable).
//   - A fallback the gateway takes is DEGRADED with the excluded entities (e2e TestKongFallbackAppliesEverythingElse, TestFallbackRounds).
//   - Headers and TLS options are honoured; insecure_skip_verify warns (TestHeadersSent, TestTLSWithCAAndClientCertificate, TestInsecureSkipVerifyWarns).
//   - Answers are never held whole (TestAnswerBodiesAreNotBuffered).
//   - At most one idle connection per gateway (TestOneIdleConnectionPerGateway).
//   - The status poll resyncs a restarted gateway and reports health (TestStatusPollResyncAndHealth).
package kong
