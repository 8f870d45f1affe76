// Package plugin is the built-in "plugin" sink: the hub as a gRPC client of
// an external sink implementing confighub.sink.v1.SinkPluginService, in any
// language. The factory does no network I/O; the connection is made lazily
// and grpc reconnects with backoff (Options). Each generation is one
// client-streaming Apply: a header, then the bytes in the plugin's chunk
// size (1 MiB by default). Each sink has its own connection.
//
// Guarantees:
//   - Describe is cached per connection (TestDescribeCachedPerConnection).
//   - Large configurations are chunked and converted to a format the plugin accepts, never copied (TestApplyChunksLargeConfig, TestApplyConvertsToAcceptedFormat).
//   - Over max_config_bytes is permanent "too-large" without a call (TestApplyTooLargeIsPermanentWithoutCall).
//   - Answers map to *sink.Error; transport failures are retryable; Apply is bounded by ctx (TestApplyMapsResponses, TestServerDownIsRetryableUnavailable, TestSlowPluginBoundedByContext).
//   - A plugin that comes back is re-described and resynced (TestReconnectRedescribesAndResyncs).
package plugin
