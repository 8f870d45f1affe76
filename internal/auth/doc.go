// Package auth owns who may call the hub: bearer tokens mapped to roles
// (read < push < admin), the per-method policy, the gRPC interceptors that
// enforce it (go-grpc-middleware v2's interceptors/auth), the token file and
// its reload, and the server's TLS / mTLS configuration. A token is compared
// with every configured token in constant time; tokens never appear in logs
// or error messages.
//
// Guarantees:
//   - No or an unknown token is Unauthenticated, a lower role PermissionDenied (TestRoles).
//   - Health and reflection are open; an unknown method needs admin (TestRoles, TestUnknownMethodNeedsAdmin).
//   - A failed reload keeps the tokens in force; swaps are atomic (TestReload, TestParseErrors).
//   - The same roles apply outside gRPC (TestCheck), and HTTP requests are read one way (TestCheckRequest).
package auth
