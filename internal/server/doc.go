// Package server is the gRPC transport edge: it serves
// confighub.v1.ConfigHubService and confighub.v1.SinkAdminService on a
// hub.Hub, with the standard health service and server reflection, and the
// go-grpc-middleware v2 chain (recovery, slog logging, protovalidate, and
// whatever the caller adds, such as auth and metrics).
//
// It is the one place where errors become gRPC status codes (see
// codeOf): the hub returns errors wrapped around its sentinels, and the
// transport maps them once. A WatchStatus whose events end because the hub
// stops (not the client) ends with Unavailable, so the client resumes
// from its last revision.
//
// Reflection is served as grpc.reflection.v1 and v1alpha, listing the
// same services, so clients that know only v1alpha (ghz v0.93.0, older
// grpcurl) work (TestReflectionV1Alpha).
package server
