// Package sink defines what a destination of the hub is (the Sink
// interface), the registry of sink kinds (a Registry value, no global
// state), and the error a sink returns to tell the engine how to treat a
// failure: an *Error that is Permanent (not retried until a new generation)
// or carries RetryAfter; any other error is retried with backoff. Error.Code
// is a closed set (codes.go, docs/api.md).
//
// The engine gives every sink these guarantees:
//   - One apply at a time per sink (engine TestNoConcurrentAppliesPerSink).
//   - Apply gets the newest generation of its slot, never out of order (engine TestBurstCoalesces, engine TestInFlightFinishesThenNewest).
//   - ctx carries the per-attempt timeout and ends on delete, stop or cancel_in_flight (engine TestAttemptTimeout, engine TestCancelInFlight).
//   - A panic in Apply is FAILED "internal" and retried (engine TestPanicRecovered).
//   - A code outside the set is mapped by ParseCode (TestParseCode, engine TestErrorCodesAreClosed).
//   - The Config and its bytes are shared with other sinks: read only.
package sink
