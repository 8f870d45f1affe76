// Package plugin is the built-in "plugin" sink: the hub as a gRPC client of
// an external sink implementing confighub.sink.v1.SinkPluginService, in any
// language.
//
// Guarantees:
//   - The factory does no network I/O. The connection is made lazily
//     (grpc.NewClient) and, while the engine runs the sink's Run loop, kept
//     up: grpc reconnects on its own with exponential backoff (1s base,
//     capped at 30s by default, see WithBackoff).
//   - Describe is called on every new connection (a restarted plugin may
//     have changed) and its answer is cached: accepted formats, largest
//     configuration, per-entity errors, chunk size. Apply re-Describes first
//     when the connection changed since the last Describe
//     (TestDescribeCachedPerConnection).
//   - Each generation is one client-streaming Apply: a header (sink, stream,
//     generation, hash of the configuration as pushed, format, total size,
//     settings, labels) then the bytes in order, in chunks of the plugin's
//     chunk_bytes or 1 MiB. The bytes are converted to a format the plugin
//     accepts (JSON when it names none); the hub's shared bytes are never
//     copied or modified (TestApplyChunksLargeConfig,
//     TestApplyConvertsToAcceptedFormat).
//   - A configuration larger than the plugin's max_config_bytes is a
//     permanent "too-large" error, without a call
//     (TestApplyTooLargeIsPermanentWithoutCall).
//   - An ApplyResponse that is not applied becomes a *sink.Error: its code,
//     message, permanent flag, retry_after and entity errors. Transport
//     failures (Unavailable, DeadlineExceeded, a broken stream) are
//     retryable. Apply never blocks beyond its ctx (TestApplyMapsResponses,
//     TestServerDownIsRetryableUnavailable, TestSlowPluginBoundedByContext).
//   - After the connection was lost and comes back, Run re-Describes and
//     asks the engine to resync, so a restarted plugin receives the current
//     generation without a new push (at the engine's next retry: the kind's
//     default backoff cap is 30s). While the plugin is unreachable Run
//     reports it with Notifier.Health (TestReconnectRedescribesAndResyncs).
//   - A plugin down or slow affects only its own sink: each sink has its own
//     connection. Close releases it.
package plugin
