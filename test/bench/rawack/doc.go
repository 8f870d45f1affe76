// Package rawack is measurement code: the minimal durable ack that
// issue 17's push figures are compared with, the one baseline shared by
// confighub-bench (scenarios 1, 7 and 8) and internal/server's
// BenchmarkPushConfig, so the two cannot measure different floors.
//
// The baseline is a bare gRPC service (bench.Raw, no interceptors) on a
// file preallocated by Preallocate (zeros written and fsynced once, so no
// block is allocated and no size changes during a run). Its unary Push
// writes the bytes with one pwrite at offset 0, calls fdatasync once and
// answers; its client-streaming Upload writes each chunk at its offset as
// it arrives, then fdatasyncs once after the last and answers. With no
// file, both only answer: the transport's own cost. The file holds the
// bytes sent at their offsets (zeros after them), and a service with no
// file answers without writing (TestPushAndUploadWriteTheBytes). Serve
// runs the baseline on loopback with a client connection to it, both
// taking messages of up to the caller's limit and refusing larger ones
// (TestServeAllowsMaxMsg), so the benchmark and confighub-bench set it up
// alike.
package rawack
