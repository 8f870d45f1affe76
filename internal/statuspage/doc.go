// Package statuspage serves the hub's live status page and the small HTTP
// API it reads, on the hub's HTTP listener (--metrics-listen, beside
// /metrics). The page is plain HTML, CSS and JavaScript embedded in the
// binary (web/): no build step, nothing loaded from elsewhere (its
// Content-Security-Policy allows only its own origin).
//
// API (JSON; with WithAuth every call needs "Authorization: Bearer <token>"
// of the read role, else 401, or 403 for a role below read):
//   - GET /api/v1/streams: {"streams": [...]}, the streams that have sinks.
//   - GET /api/v1/status?stream=S: GetStatusResponse as protojson, the same
//     snapshot GetStatus returns (404 for an unknown stream).
//
// Stream names are checked by the rule GetStatus and WatchStatus apply
// (rules.proto's stream_name, through protovalidate, not a copy of it): a
// name no stream can have is a 400 with the rule's message, the text of
// gRPC's InvalidArgument, on status and watch alike; a valid name of no
// stream is a 404 (TestAPIValidatesNames).
//   - GET /api/v1/diff?stream=S&to=G[&from=F]: DiffConfig's response as
//     protojson, generation G (0: the current one) against F (default G-1).
//   - GET /api/v1/watch?stream=S&from=R: WatchStatus's events as
//     Server-Sent Events ("id:" the revision, "data:" the event as
//     protojson); from (or Last-Event-ID) resumes after revision R as a gRPC
//     watcher's from_revision does. An idle stream sends a comment every 15 s.
//
// Guarantees:
//   - The page and API read the hub's status view (Source: hub.Hub's Status
//     and Watch, the code path of GetStatus and WatchStatus); nothing polls.
//     Error texts are the ones the engine already redacted for gRPC status,
//     and the status carries no sink specs, so no secret reaches the page
//     (TestNoSecretReachesThePage).
//   - After a push the page shows each sink turn APPLIED, a rejection shows
//     the entity errors grouped by the Kubernetes object of their k8s-*
//     tags, a retrying sink shows BACKOFF with a live countdown to its next
//     retry; state is shown as text as well as colour
//     (TestPageFollowsApplyRejectAndBackoff).
//   - A gateway running a fallback (on_reject fallback) shows DEGRADED with
//     its reason, and the entities its fallback excludes, under their
//     Kubernetes object with what each depends on (TestPageShowsFallback).
//   - 1,000 sinks load and render within 2 s of navigation in headless
//     Chromium, and a sink's state change shows within 1 s of the hub's event:
//     the page updates only the row an event touches, batched per frame
//     (TestThousandSinks).
//   - With WithAuth, nothing but the token form is shown before a read token
//     is given; the token is kept in sessionStorage and sent as a header,
//     never in a URL; the API refuses a missing or unknown token
//     (TestTokenNeededBeforeAnything, TestAPIAuth). Denials are logged
//     without the token.
//   - A watch resumes after the revision given (TestWatchResumes); event
//     streams end when the context given to New ends, so the listener's
//     shutdown does not wait for them. Each change is encoded once for
//     every page watching it (status.Encodings; TestWatchersShareEvents).
//
// The browser tests need Chromium (CONFIGHUB_CHROMIUM, or chromium on PATH);
// without it they fail, unless CONFIGHUB_SKIP_BROWSER=1 skips them (saying
// so). CONFIGHUB_SCREENSHOTS names a folder for their screenshots (default:
// the test's temporary folder).
package statuspage
