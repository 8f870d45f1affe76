// Package engine fans each stream's newest durable configuration out to its
// sinks: a latest-wins slot per sink decided by a pure state machine
// (machine.go), one outcome event per attempt (outcome.go), status in a
// revisioned broker (internal/engine/status).
//
// Guarantees (engine_test.go unless noted):
//   - Isolation: a hung, failing or panicking sink delays no one (TestHungSinkDoesNotDelayOthers, TestPublishNeverBlocks); an idle sink holds no goroutine (idle_test.go TestIdleSinksHoldNoGoroutine).
//   - Every branch of the slot machine has a table test (TestSlotMachineDecide, TestSlotMachineOffer, TestSlotMachineStart, TestSlotMachineOutcome, TestSlotMachineResyncAndReachable, TestSlotMachineStateChanges, TestSlotMachineRefusal).
//   - One apply at a time per sink, never out of order (TestNoConcurrentAppliesPerSink, TestPropertyConvergence).
//   - Latest wins: at most one pending generation per sink (TestCollapseWhileProcessing, TestBurstCoalesces).
//   - An apply in flight finishes, or is cancelled with cancel_in_flight (TestInFlightFinishesThenNewest, TestCancelInFlight).
//   - Hash skip, across restarts; Resync forces the apply (TestHashSkip, TestRestoreSeedsHashSkip, TestResyncForcesReapply).
//   - A restored last success is in the metrics at once (metrics TestRestoredLastSuccess).
//   - Resync or a reachable Health ends a backoff wait (TestResyncAndRecoveryCutBackoff).
//   - Per-attempt timeout, default 30s (TestAttemptTimeout).
//   - Backoff with jitter and a cap; a new generation interrupts it; Retry-After honoured (TestBackoffGrowsAndCaps, TestNewGenerationInterruptsBackoff, TestRetryAfterHonoured).
//   - A permanent rejection is not retried for that generation (TestPermanentNotRetried).
//   - A degraded apply (fallback taken) is DEGRADED, not converged (TestDegradedSinkIsNotConverged).
//   - A panic in Apply is FAILED "internal" and retried (TestPanicRecovered).
//   - last_error_code is always in the closed set sink.Codes (TestErrorCodesAreClosed).
//   - Error text is redacted and the sink's secrets scrubbed (TestErrorTextRedacted, TestSinkSecretsScrubbed).
//   - Sink errors are bounded before status shows them (TestStatusBoundsSinkErrors, TestApplyOutcomeBoundsDegradedRejection).
//   - Pacing: min_interval, debounce, max_delay (TestMinInterval, TestDebounce, TestDebounceMaxDelay).
//   - Concurrent applies are limited in two pools, gateways and the rest (TestSlotPool, TestMaxConcurrentApplies, TestApplySlotQueue, TestNonGatewaySinksHaveTheirOwnApplySlots).
//   - A sink whose applies hold nothing of the hub's (Capabilities.NoApplySlot: a Kong data plane) takes no slot (TestNoApplySlotSinksTakeNoSlot).
//   - Gating by any gateway or by waves; a rejection stops later waves (TestGateAnyGateway, TestGateWaves, TestGateWaveMinApplied, TestWaveRejectionStopsLaterWaves).
//   - Dynamic sinks get the current generation; delete and replace behave (TestNewSinkGetsCurrentGeneration, TestDeleteSinkStopsAndCloses, TestDeleteSinkIsLogged, TestReplaceSink, TestValidateSink).
//   - Specs are read without copying them all; SpecBytes is O(1) (TestSinkAndSpecBytes, TestSpecBytesTotalFollowsEveryChange).
//   - A Runner's Health shows as "unreachable" (TestHealthReflectedInStatus).
//   - Success, or a skip back to the applied hash, clears the last error (TestRecoveryClearsLastError, TestSkipBackClearsRejection).
//   - Revisioned status, per-generation convergence, watchers never delay the engine (TestGenerationConverges, TestSlowWatcherDoesNotBlockEngine).
//   - Replicas: ownership splits a stream sink by sink; reown resumes from shared status (TestOwnershipSplitsGatedStream, TestReownResumesFromSharedStatus, TestHandOverIsNotADelete).
//   - One conformance suite for both modes (TestEngineConformance; test/enginetest).
//   - Applied records are stored, a failed record retried (TestRecorder).
//   - Convergence is observed once and survives a restart (TestConvergenceObservedOnceAndRecorded, TestRestoredConvergenceKeepsItsTime, TestRestoredConvergenceWithoutRecord).
//   - One config per stream is held, shared by every sink (TestPropertyConvergence).
//   - Stop closes every worker, runner, sink and watcher (TestStopClosesEverything, goleak).
//   - A sink that ignores ctx blocks only calls for its own name (TestStuckSinkDoesNotBlockOtherAdminCalls).
//   - One outcome event per attempt (TestApplyOutcomeEvent).
//   - A generation published after a newer one is tracked, never offered (TestSupersededGenerationIsTracked).
package engine
