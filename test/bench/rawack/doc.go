// Package rawack is measurement code: the minimal durable ack the push
// figures are compared with, shared by test/bench and internal/server's
// BenchmarkPushConfig. A bare gRPC service on a preallocated file: Push
// pwrites the bytes and fdatasyncs once; Upload writes each chunk at its
// offset and fdatasyncs after the last; with no file both only answer
// (TestPushAndUploadWriteTheBytes, TestServeAllowsMaxMsg).
package rawack
