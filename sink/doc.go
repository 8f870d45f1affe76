// Package sink defines a destination of the hub (Sink), the registry of
// sink kinds, and *Error, which tells the engine how to treat a failure
// (any other error is retried with backoff).
//
// The engine gives every sink these guarantees:
//   - One apply at a time per sink (engine TestNoConcurrentAppliesPerSink).
//   - Apply gets the newest generation of its slot, never out of order (engine TestBurstCoalesces, engine TestInFlightFinishesThenNewest).
//   - ctx carries the per-attempt timeout and ends on delete, stop or cancel_in_flight (engine TestAttemptTimeout, engine TestCancelInFlight).
//   - A panic in Apply is FAILED "internal" and retried (engine TestPanicRecovered).
//   - A code outside the set is mapped by ParseCode (TestParseCode, engine TestErrorCodesAreClosed).
//   - The Config and its bytes are shared with other sinks: read only.
package sink
