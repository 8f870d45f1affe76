// Package sink defines what a destination of the hub is (the Sink
// interface), the registry of sink kinds, and the error a sink returns to
// tell the engine how to treat a failure.
//
// The engine gives every sink these guarantees:
//   - Apply is never called concurrently for one sink: one apply at a time
//     (engine's TestNoConcurrentAppliesPerSink).
//   - Apply gets the newest generation the sink's slot holds; generations a
//     sink was too busy for are skipped (latest wins), never applied out of
//     order (engine's TestBurstCoalesces, engine's
//     TestInFlightFinishesThenNewest).
//   - ctx carries the per-attempt timeout and is cancelled when the sink is
//     deleted, the hub stops, or (with cancel_in_flight) a newer generation
//     arrives (engine's TestAttemptTimeout, engine's TestCancelInFlight).
//   - A panic in Apply is recovered, reported as FAILED with code
//     "internal", and retried with backoff (engine's TestPanicRecovered).
//   - The Config and its bytes are shared with other sinks: read only.
//
// A sink reports how a failure should be handled by returning an *Error
// (or wrapping one): Permanent for a rejection of this configuration (not
// retried until a new generation), RetryAfter for a destination that asked
// to wait. Any other error is retried with exponential backoff.
//
// Error.Code is a Code, a closed set (codes.go, docs/api.md): status and
// metrics never report another value. ParseCode maps a code outside the set
// (rejected when permanent, unavailable otherwise; TestParseCode), and the
// engine applies it to every sink, keeping the sink's own code in the
// message (engine's TestErrorCodesAreClosed).
//
// Kinds are registered on a Registry value (no global state) with
// Register(kind, factory); the built-in kinds in clients/ register the same
// way.
package sink
