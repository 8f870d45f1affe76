// Package auth owns who may call the hub: bearer tokens mapped to roles
// (read < push < admin) by a reloadable token file, the per-method policy
// and its interceptors, and the server's TLS / mTLS. Tokens are compared in
// constant time and never appear in logs or errors.
//
// Guarantees:
//   - No or an unknown token is Unauthenticated, a lower role PermissionDenied (TestRoles).
//   - Health and reflection are open; an unknown method needs admin (TestRoles, TestUnknownMethodNeedsAdmin).
//   - A failed reload keeps the tokens in force; swaps are atomic (TestReload, TestParseErrors).
//   - The same roles apply outside gRPC (TestCheck), and HTTP requests are read one way (TestCheckRequest).
package auth
