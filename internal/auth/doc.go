// Package auth owns who may call the hub: bearer tokens mapped to roles
// (read < push < admin), the per-method policy, the gRPC interceptors that
// enforce it (go-grpc-middleware v2's interceptors/auth), the token file and
// its reload, and the server's TLS / mTLS configuration.
//
// Guarantees:
//   - A token is checked against every configured token in constant time:
//     both sides are hashed to SHA-256 and compared with crypto/subtle,
//     and the loop never exits early on a match, so the answer time does
//     not depend on which token (or how much of one) matched.
//   - No or unknown token: codes.Unauthenticated. A known token whose role
//     is below the method's: codes.PermissionDenied (TestRoles).
//   - Health and reflection stay open; every other method needs a role,
//     and a method the policy does not know needs admin (fail closed)
//     (TestRoles, TestUnknownMethodNeedsAdmin).
//   - A reload that fails (unreadable file, bad syntax, unknown role, empty
//     file) keeps the tokens in force; the tokens are swapped atomically,
//     so a call sees either the old set or the new one (TestReload,
//     TestParseErrors).
//   - Check applies the same roles outside gRPC (CheckRequest, for the
//     HTTP endpoints): ErrUnknownToken for no or an unknown token, ErrPermissionDenied
//     for a role below the one needed (TestCheck).
//   - Authenticator.CheckRequest is the one reading of an HTTP request's
//     token (the status page's API, the profiles of --profiling): "Authorization:
//     Bearer <token>", the scheme in any case; 401 with WWW-Authenticate
//     for no token (ErrNoToken) or an unknown one, 403 for a role below the
//     one needed (TestCheckRequest).
//   - Tokens never appear in logs or error messages.
package auth
