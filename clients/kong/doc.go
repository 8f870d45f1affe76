// Package kong is the "kong" sink kind: one DB-less Kong gateway, configured
// through its Admin API with POST /config (github.com/kong/go-kong).
//
// What it guarantees:
//   - Apply sends cfg.JSON() with check_hash=1 and flatten_errors=1. The JSON
//     is converted once per generation and the same bytes are shared by
//     every gateway sink (never copied per sink). 201 and 304 (hash
//     unchanged) are success (TestApply201Then304).
//   - Failures come back as *sink.Error:
//     400 -> Permanent, code "rejected", Kong's flattened_errors parsed into
//     EntityErrors (entity type, name, id, tags such as k8s-name:..., field
//     and message), Body the raw answer (TestApply400EntityErrorsWithTags).
//     Kong 3.9 cannot flatten a dangling reference: for an entity given in
//     a top-level list its answer holds no entity error (only Kong's
//     message), for one given nested the error is read from "fields" by
//     the entity's name or id, without tags
//     (TestApply400DanglingReferences);
//     413 -> Permanent, code "too-large", the message names the body size
//     (TestApply413TooLarge, TestApply413LargeBody);
//     429 -> code "rate-limited" with RetryAfter from the Retry-After header
//     (seconds or HTTP date; read by the transport because go-kong's raw
//     /config call returns only status and body; TestApply429RetryAfter);
//     504 and timeouts -> code "timeout" (TestApplyTimeoutOnHungGateway);
//     other 5xx and connection errors (refused, reset, dropped) -> code
//     "unavailable", both retried with backoff
//     (TestApply5xxAndDropsAreRetryable, TestApplyConnectionRefused);
//     401/403 -> code "unauthorized", retried (the credentials, not the
//     configuration, are wrong; TestApplyUnauthorizedIsRetryable); other
//     4xx -> Permanent "rejected".
//   - on_reject: ON_REJECT_FALLBACK (off by default, docs/fallback.md): a
//     400 whose entity errors name entities of the configuration is
//     followed by a fallback built by internal/kongraph (the generation
//     without them and their dependants, an excluded entity kept at the
//     version the gateway last accepted where its references allow); a
//     fallback rejected with errors naming further entities is rebuilt
//     without them, at most MaxFallbackRounds (3) times, then the
//     rejection is returned as without fallback. A fallback the gateway
//     takes is returned as *sink.Degraded with the excluded entities
//     (type, name, id, tags, the gateway's message, depends_on, previous
//     version kept) and the fallback's hash; the same generation applied
//     again (a restarted gateway's resync) sends that fallback, not the
//     rejected whole (e2e TestKongFallbackAppliesEverythingElse,
//     TestFallbackRounds).
//   - Admin API options (KongSpec): address, TLS (CA bundle file or PEM,
//     client certificate, server name; insecure_skip_verify only when set,
//     and then a warning is logged), extra headers on every request (e.g.
//     Kong-Admin-Token). There is no client-wide timeout: each request is
//     bounded by its ctx (the engine's per-attempt timeout)
//     (TestHeadersSent, TestTLSWithCAAndClientCertificate,
//     TestInsecureSkipVerifyWarns).
//   - Answers are never held whole: a 2xx of POST /config (Kong echoes
//     every loaded entity, about the configuration's size) is drained
//     through a small buffer and dropped; other answers are read up to
//     8 MiB (TestAnswerBodiesAreNotBuffered).
//   - At most one idle connection per gateway: when an apply and a status
//     poll overlap (two connections), the second is closed once both are
//     answered and later requests reuse the one kept
//     (TestOneIdleConnectionPerGateway).
//   - Liveness (sink.Runner): GET /status every status_interval (default
//     10s) on the injected clock, each poll bounded by min(interval, 10s).
//     The all-zeros configuration_hash after a successful apply (or at the
//     first poll after the hub started) means the gateway restarted empty:
//     Notifier.Resync("gateway restarted empty"). An unreachable gateway is
//     reported with Health(err) at every failed poll (logged once), and
//     Health(nil) when it answers again (TestStatusPollResyncAndHealth).
//     The poll never touches Apply, so a hung gateway blocks only its own
//     sink.
package kong
