// Package plugin is the "plugin" sink: the hub as a gRPC client of an
// external confighub.sink.v1.SinkPluginService, one connection per sink.
// Each generation is one client-streaming Apply: a header, then chunks.
//
// Guarantees:
//   - Describe is cached per connection (TestDescribeCachedPerConnection).
//   - Large configurations are chunked and converted to a format the plugin accepts, never copied (TestApplyChunksLargeConfig, TestApplyConvertsToAcceptedFormat).
//   - Over max_config_bytes is permanent "too-large" without a call (TestApplyTooLargeIsPermanentWithoutCall).
//   - Answers map to *sink.Error; transport failures are retryable; Apply is bounded by ctx (TestApplyMapsResponses, TestServerDownIsRetryableUnavailable, TestSlowPluginBoundedByContext).
//   - A plugin that comes back is re-described and resynced (TestReconnectRedescribesAndResyncs).
package plugin
