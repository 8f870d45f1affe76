// Package statuspage serves the live status page (embedded HTML, CSS and
// JavaScript in web/, nothing loaded from elsewhere) and its JSON API on
// --metrics-listen: GET /api/v1/streams, /api/v1/status?stream=S,
// /api/v1/diff?stream=S&to=G (against the generation before), and
// /api/v1/watch?stream=S&from=R (WatchStatus as Server-Sent Events,
// resumable with from or Last-Event-ID). With WithAuth every call needs a
// read token.
//
// Guarantees:
//   - The page reads the hub's status view; no secret reaches it (TestNoSecretReachesThePage).
//   - It follows an apply, a rejection by Kubernetes object, a backoff countdown (TestPageFollowsApplyRejectAndBackoff).
//   - A fallback shows DEGRADED with its excluded entities (TestPageShowsFallback).
//   - Each generation reads converged, converging or rejected by N of M sinks, and opens its diff, secrets redacted (TestPageShowsGenerationDiffs).
//   - 1,000 sinks render within 2 s, and changes within 1 s (TestThousandSinks).
//   - With auth, only the token form shows before a token; the API refuses without one (TestTokenNeededBeforeAnything, TestAPIAuth).
//   - Names are validated as GetStatus validates them (TestAPIValidatesNames).
//   - A watch resumes; each change is encoded once for every page (TestWatchResumes, TestWatchersShareEvents).
//
// The browser tests need Chromium (CONFIGHUB_CHROMIUM, or chromium on PATH);
// CONFIGHUB_SKIP_BROWSER=1 skips them, saying so.
package statuspage
