// Package server is the gRPC transport edge: ConfigHubService and
// SinkAdminService on a hub.Hub, with health, reflection (v1 and v1alpha)
// and the go-grpc-middleware v2 chain (recovery, slog logging,
// protovalidate, and the caller's: auth, metrics). It is the one place
// where hub errors become gRPC codes (codeOf).
//
// Guarantees:
//   - Status messages are bounded to 4 KiB (TestToStatusBoundsTheMessage).
//   - Labels and names are validated by one rule each, on every RPC (TestLabelBounds, TestReadRPCsValidateNames).
//   - WatchStatus streams share encodings, compressed or not (TestWatchersShareEncodings, TestWatchSharesWithVaryingCompressor).
//   - Keepalive keeps a pinging watcher and drops a dead one (TestWatchSurvivesClientKeepalive, TestDefaultKeepalive, TestDeadWatcherIsDropped).
//   - Received bytes are exactly the client's; upload chunks are not copied (TestReceivedBytesAreExact, TestUploadChunkKeepsReceiveBuffers, FuzzUnmarshalUpload).
//   - Health and reflection calls are logged at debug unless they fail (TestPlumbingCallsLogAtDebug, TestCallLogLevels).
//   - Serve returns nil once Shutdown stopped it, whoever came first (TestServeAfterShutdown).
//   - A GetConfig answer over the message limit is ResourceExhausted naming the flag (TestGetConfigOverTheMessageLimit).
//   - WatchStatus sends its header at once (cmd/confighubctl TestStatusWatchShowsAnOutage).
//   - Reflection v1alpha lists the same services (TestReflectionV1Alpha).
//   - A call past --max-concurrent-streams on one connection is refused at once by name, not left waiting in the client (TestMaxConcurrentStreamsRefusedByName).
//   - Each push records the token's name, never the token, or anonymous, and the peer (cmd/confighubctl TestHistoryDiffRollback; e2e TestHistoryRollbackBringsTheFleetBack).
package server
