// Package server is the gRPC transport edge: it serves
// confighub.v1.ConfigHubService and confighub.v1.SinkAdminService on a
// hub.Hub, with the standard health service and server reflection, and the
// go-grpc-middleware v2 chain (recovery, slog logging, protovalidate, and
// whatever the caller adds, such as auth and metrics).
//
// It is the one place where errors become gRPC status codes (see
// codeOf): the hub returns errors wrapped around its sentinels, and the
// transport maps them once, bounding the message to 4 KiB whatever input
// it names (TestToStatusBoundsTheMessage). Requests are validated by the
// rules of the .proto before any handler runs: labels bounded (64, key 128
// bytes, value 1 KiB, 16 KiB in all) with a refusal naming the label
// (TestLabelBounds); every stream and sink name, on read RPCs as on
// pushes, by one rule each (rules.proto), with a short message
// (TestReadRPCsValidateNames). A PushConfigRequest that a direct check of
// its rules accepts (pushValid: it accepts nothing the rules refuse,
// FuzzPushValidAgrees, and knows every rule of the message,
// TestPushRulesAreKnown) skips protovalidate's CEL programs; any other
// goes through them and is refused by the rule it breaks. A WatchStatus whose events end because the hub
// stops (not the client) ends with Unavailable, so the client resumes
// from its last revision. Each status change is marshalled once for all
// WatchStatus streams, not once per watcher: every stream uses the
// server's one codec, and grpc compresses the shared bytes per stream, so
// a client that asked for compression reads each change compressed
// (TestWatchersShareEncodings), whatever its compressor's output
// (TestWatchSharesWithVaryingCompressor).
//
// HTTP/2 keepalive (DefaultKeepalive, WithKeepalive): clients may ping
// every 5 s or more with or without streams, so a watcher pinging every
// 10 s stays connected (TestWatchSurvivesClientKeepalive, at a scaled
// clock; TestDefaultKeepalive checks the production values); a client that
// answers no ping is disconnected PingAfterIdle+PingTimeout after its last
// frame, ending its watch (TestDeadWatcherIsDropped).
//
// Received messages are read into buffers that are not cleared before
// use (recvPool, grpc-go's default pool clears each one, up to its whole
// capacity) and decoded by the proto codec from them; every byte a
// handler gets is one the client sent (TestReceivedBytesAreExact,
// TestRecvPoolSizes). A PushConfigRequest that arrived in several frames
// is copied once into a buffer of its own, which its config keeps, and
// decodes as proto.Unmarshal decodes it (FuzzUnmarshalPush). An upload
// chunk (an UploadConfigRequest that is a chunk and nothing else) is not
// copied at all: UploadConfig hands the receive buffers' bytes to the hub,
// which copies them once into the configuration's own slice, and frees
// the buffers after (TestUploadChunkKeepsReceiveBuffers); every other
// message decodes as proto.Unmarshal decodes it (FuzzUnmarshalUpload).
// Calls are served by up to 64 worker goroutines that
// keep their grown stacks (grpc.NumStreamWorkers); docs/performance.md
// (scenario 7) has what both save per push.
//
// Every unary call is logged once it ended as "finished call" with the
// fields go-grpc-middleware's logging interceptor writes (service, method,
// peer, start time, deadline, code, error, duration), in its order and at
// its levels (TestUnaryCallLogMatchesMiddleware); the fields are built
// only when the logger takes the line. Streams are logged by the
// middleware's interceptor.
//
// Serve returns nil once Shutdown stopped the server, also when the
// Shutdown came first, as a SIGTERM right after the start does
// (TestServeAfterShutdown); cmd/confighub exits 0 then
// (cmd/confighub TestStopRightAfterStart).
//
// GetConfig answers in one message: a configuration whose answer is over
// the message limit is ResourceExhausted naming its size and
// --max-message-bytes (TestGetConfigOverTheMessageLimit).
//
// WatchStatus sends its header at once, before any event, so a client
// knows the watch is open even when a resumed watch has nothing new
// (hubclient.WithWatchState; cmd/confighubctl TestStatusWatchShowsAnOutage).
//
// Reflection is served as grpc.reflection.v1 and v1alpha, listing the
// same services, so clients that know only v1alpha (ghz v0.93.0, older
// grpcurl) work (TestReflectionV1Alpha).
package server
