// Package engine fans each stream's newest configuration out to its sinks:
// one goroutine and one latest-wins slot per sink, with hash skip, retries
// with backoff, pacing, gating by waves, and a status broker
// (internal/engine/status) that publishes every change as a revisioned event.
//
// The hub calls Publish after a configuration is durably accepted, and
// PutSink/DeleteSink for the sinks file and the admin RPCs. Publish never
// waits for a sink. Stream names come resolved (the hub gives a push
// without one config.DefaultStream, sinkspec a sink without one): the
// engine takes them as they are.
//
// Guarantees, each with its named test (engine_test.go unless noted):
//
//   - Isolation: a sink that hangs, fails or panics never delays Publish,
//     another sink, or a status watcher (TestHungSinkDoesNotDelayOthers,
//     TestPublishNeverBlocks).
//   - The slot's decision is a pure state machine (machine.go): what to
//     do next at a given time (apply a generation, wait until a time,
//     wait for the gate, idle, skip by hash) and what an attempt's outcome
//     changes (applied, rejected, retryable with backoff or Retry-After,
//     degraded, superseded), with no I/O, lock or clock inside; the worker
//     does what it decides. Every branch has a table test in machine_test.go
//     (TestSlotMachineDecide, TestSlotMachineOffer, TestSlotMachineStart,
//     TestSlotMachineOutcome, TestSlotMachineResyncAndReachable,
//     TestSlotMachineStateChanges, TestSlotMachineRefusal).
//   - One apply at a time per sink, generations never applied out of order
//     (TestNoConcurrentAppliesPerSink, property TestPropertyConvergence).
//   - Latest wins: a sink holds at most one pending generation; a newer one
//     replaces it and counts as coalesced; a burst applies a handful of
//     times and ends at the last generation (TestCollapseWhileProcessing,
//     TestBurstCoalesces).
//   - An apply in flight finishes, then the newest is taken; with
//     options.cancel_in_flight a newer generation cancels it
//     (TestInFlightFinishesThenNewest, TestCancelInFlight).
//   - Hash skip: a sink whose applied hash equals the new hash is not
//     called and reports SKIPPED, also after a restart via Restore
//     (TestHashSkip, TestRestoreSeedsHashSkip); a Runner's Resync forces
//     the apply (TestResyncForcesReapply).
//   - A sink that starts with a known last success (its Restore record, or
//     a peer's shared status) has it in the metrics at once
//     (Metrics.LastSuccess), as status has it in last_applied_time: a
//     restart leaves no gap in the staleness metric until the next apply
//     (metrics TestRestoredLastSuccess).
//   - A Resync, or a Health report that the destination is reachable again,
//     ends a backoff wait at once (a Retry-After still holds)
//     (TestResyncAndRecoveryCutBackoff).
//   - Per-attempt timeout, options.timeout, default 30s
//     (TestAttemptTimeout).
//   - Retryable failures back off exponentially with jitter up to a cap
//     (TestBackoffGrowsAndCaps, sinkspec's TestBackoffDelay); a new generation interrupts the wait and
//     is tried at once (TestNewGenerationInterruptsBackoff);
//     sink.Error.RetryAfter is honoured (TestRetryAfterHonoured).
//   - A permanent error (sink.Error.Permanent) leaves the sink FAILED with
//     rejected_generation set; that generation is not retried, a new one is
//     (TestPermanentNotRetried).
//   - A sink.Degraded from Apply (the destination rejected the generation
//     and took a fallback of it) leaves the sink DEGRADED: rejected_generation
//     is the generation (not converged, later waves skip it, not retried
//     until a new generation; a resync applies it again), excluded_entities
//     and fallback_generation/fallback_hash show the fallback, applied_hash
//     is the fallback's (no hash skip against the last whole), and a later
//     generation applied whole returns it to APPLIED with the fallback
//     fields cleared (TestDegradedSinkIsNotConverged).
//   - A panic in Apply is recovered, reported FAILED with code "internal" and
//     a next_retry_time, and retried with backoff (TestPanicRecovered).
//   - last_error_code is always one of the closed set sink.Codes: a code
//     a sink sets that is not in it is mapped by sink.ParseCode, and the
//     sink's own code stays in last_error (TestErrorCodesAreClosed).
//   - A sink's error text (message, entity error messages) passes through
//     WithMessageRedactor before status, logs and LastFailed; the raw body
//     is kept (TestErrorTextRedacted). The sink's own secrets
//     (WithSecretValues: its token, header values) are replaced by
//     "<redacted>" in that text, the raw body, a Runner's health report
//     and a panic's log line (TestSinkSecretsScrubbed).
//   - A sink's error is bounded before status shows it, so no answer of a
//     destination makes GetStatus or a snapshot exceed the message limit:
//     last_error at most 4 KiB, the first 100 entity errors (32 KiB in all,
//     texts cut) with entity_errors_omitted counting the rest, the raw body
//     kept for LastFailed at most 8 MiB (TestStatusBoundsSinkErrors); a
//     degraded apply's rejection too (TestApplyOutcomeBoundsDegradedRejection).
//   - Pacing: options.min_interval between apply starts
//     (TestMinInterval); options.debounce with options.max_delay
//     (TestDebounce, TestDebounceMaxDelay).
//   - A hub-wide limit of concurrent applies (WithMaxConcurrentApplies,
//     default 64) in two pools of that size: gateway sinks
//     (Describe().Gateway: kong, kong-db) share one, every other sink
//     (konnect, file, plugins, ...) the other, so a hung Konnect holds a
//     slot of its own pool for its timeout and none of the gateway
//     fan-out's (TestNonGatewaySinksHaveTheirOwnApplySlots). A sink waiting
//     for a slot is PENDING (reported once, not again for each newer
//     generation), blocks nobody else's bookkeeping, is not woken until a
//     slot is handed to it, then applies the newest generation; slots are
//     handed over in arrival order, the pool deciding and the worker
//     waking the one it names (TestSlotPool, TestMaxConcurrentApplies,
//     TestApplySlotQueue).
//   - Gating: GATE_ANY_GATEWAY waits for one gateway sink of the stream
//     (none: no wait) (TestGateAnyGateway); GATE_WAVE waits for the lower
//     waves, wave_min_applied of them (TestGateWaves,
//     TestGateWaveMinApplied); a generation rejected by a lower wave never
//     reaches later waves, which report SKIPPED naming the rejecting sink,
//     and a newer generation re-opens (TestWaveRejectionStopsLaterWaves).
//     WAITING carries the reason.
//   - Dynamic sinks: a new sink gets the current generation at once
//     (TestNewSinkGetsCurrentGeneration); deleting stops its goroutines,
//     closes it and removes its status (TestDeleteSinkStopsAndCloses);
//     StopSink does the same for a sink that goes on elsewhere (a replica
//     hands it over) without logging it as deleted (TestStopSinkIsNotADelete);
//     replacing restarts it, moving its status if its stream changed
//     (TestReplaceSink). Specs are validated, normalised and resolved by
//     package sinkspec (its guarantees are there); errors wrap
//     sink.ErrUnknownKind or sink.ErrInvalidSpec and change nothing
//     (TestValidateSink).
//   - The hub asks for specs without copying them all: Sink returns a
//     copy of one sink's or peer's spec (the caller may change it),
//     HasSink tells whether a sink or peer of that name exists without
//     copying its spec, and SpecBytes(except) is the encoded size of
//     every spec but except's (TestSinkAndSpecBytes). SpecBytes is O(1):
//     the engine keeps the total as sinks and peers are put, replaced
//     (bigger, smaller, moved to another stream; a refused replace
//     changes nothing), deleted and handed over by Reown either way, so
//     no spec is sized when it is asked (TestSpecBytesTotalFollowsEveryChange).
//   - A Runner runs in a goroutine owned by the worker; Health(err) shows
//     as last_error "unreachable: ..." while it lasts
//     (TestHealthReflectedInStatus).
//   - A successful apply clears last_error and last_error_code, the
//     Runner's "unreachable" included (the destination just answered),
//     and keeps them as previous_error and previous_error_code
//     (TestRecoveryClearsLastError). So does a hash skip back to what the
//     destination runs (a push that failed, rejected or not, then the last
//     applied one again), with its entity_errors and their metric, but not
//     the Runner's "unreachable": nothing was sent
//     (TestSkipBackClearsRejection).
//   - Status: every change is an event with a monotonic revision, starting
//     after the clock's Unix nanoseconds when the engine is made (so a
//     watcher resuming with a revision from before a restart gets a
//     snapshot); per
//     generation, sinks_applied/sinks_total and converge_time
//     (TestGenerationConverges); watchers never delay the engine
//     (status package tests, TestSlowWatcherDoesNotBlockEngine). The
//     fan-out to watchers runs in rounds: a change is sent 5 ms
//     (WithStatusDispatchWindow) after the first change of its round,
//     with all of the round's changes (a change superseded within the
//     round left out, status.TestRoundCoalescesChanges), so a
//     push's burst of changes
//     reaches the watchers after its ack instead of competing with it for
//     the CPU (status.TestDispatchWindowBatchesChanges).
//   - Replicas (WithOwnership): the engine keeps every sink and runs a
//     worker only for the sinks it owns; the others are peers, followed
//     through ObserveSink (the shared status view) and shown in its broker
//     with their shared status. Gates and generation counts run over every
//     sink of the stream, so a gated stream is split sink by sink: a wave
//     run on one replica waits for the lower waves' statuses from the
//     others; only the stream's leader records the convergence metric, so
//     summed over replicas each generation counts once
//     (TestOwnershipSplitsGatedStream); the others take the leader's
//     converge time from the shared view (ObserveGeneration), and a replica
//     that takes the lead counts the generations it saw converge whose
//     leader's count never reached it (cluster
//     TestConvergenceSurvivesTakeoverAndRestart). Reown applies a change of
//     ownership: a gained sink is seeded with its restored record or its
//     last shared status, whichever is newer, so it does not apply again
//     what its previous owner applied; a lost one is stopped and closed
//     (TestReownResumesFromSharedStatus), and logged as "sink handed over"
//     (to= its new owner when the Ownership is an OwnerNamer), never as
//     "sink deleted" (TestHandOverIsNotADelete). A peer's LastApplied and
//     LastFailed are not known to this engine: a replica answers GetConfig
//     of every sink from its shared status, the failed record its owner's
//     status writer copies to etcd, and the generation's bytes in the etcd
//     store (cluster TestFailedConfigOnEveryReplica).
//   - Both modes pass one conformance suite, enginetest.Run, observed
//     through the status view: one engine here (TestEngineConformance),
//     two replicas over etcd in package cluster (its
//     TestEngineConformance); what runs on one engine only, and why, is in
//     enginetest's doc.
//   - Successful applies are recorded with the AppliedRecorder; a failed
//     record is retried after the next apply (TestRecorder).
//   - A generation's convergence is observed once, when its last sink
//     applies it: the metrics get accept-to-converge and a recorder that is
//     also a ConvergedRecorder gets the time, off the engine lock
//     (TestConvergenceObservedOnceAndRecorded). After a restart
//     (RestoreConverged, Restore) a generation that had converged keeps
//     its recorded time, or without a record the time of its last restored
//     apply, and is neither logged as converged nor observed again
//     (TestRestoredConvergenceKeepsItsTime,
//     TestRestoredConvergenceWithoutRecord; with the bolt store and the
//     real binary, e2e TestConvergenceSurvivesRestart).
//   - Memory: one *config.Config per stream is shared by every sink (never
//     copied); per sink the engine keeps a constant amount of state plus
//     pointers to the configs in its slot, last applied and last failed
//     (for GetConfig diagnostics; the last failed is dropped once a
//     generation as new is applied, so in steady state only the stream's
//     current one is held). Status history is bounded by WithHistory per
//     stream, generations by the last 16 per stream (TestPropertyConvergence
//     checks that a converged engine holds one config per stream).
//   - Stop cancels every worker and runner, waits for them, closes the
//     sinks and every watcher (TestStopClosesEverything; goleak in
//     TestMain checks every test).
//
// Contract with sinks: Apply must return once its ctx ends (timeout,
// deletion, Stop). A sink that ignores ctx keeps only its own worker (and
// one apply slot) busy, but DeleteSink, PutSink of that name and Stop wait
// for it; calls for other names do not (TestStuckSinkDoesNotBlockOtherAdminCalls).
// BenchmarkFanout1000 measures the engine's own cost of one generation to
// 1,000 sinks.
//
// Metrics and logs: every attempt (and hash skip) ends in one apply-outcome
// event (outcome.go: sink, stream, generation, hash, Result of the closed
// set Results(), sink.Code, duration, attempt, next attempt, excluded
// entities) from which the sink's status fields, the metrics and the log
// line are made, never by hand in a branch (TestApplyOutcomeEvent): one log
// line per apply (sink, stream, generation, result, duration, attempt); a
// failure line names the error, the next retry time and that a new
// configuration is tried at once. Metrics are reported through the Metrics
// interface (metrics.go), no-op by default.
//
// Status semantics: desired_generation is the generation the sink last
// took up (the stream's newest is in GenerationStatus), so the event rate
// follows the sinks' work, not the push rate. A Retry-After applies to any
// generation (the destination asked the hub to wait); backoff of one
// generation is dropped when a newer one arrives. A permanently rejected
// generation is not retried even on Resync. Replacing a sink with a
// changed spec starts it afresh (it applies the current generation again);
// putting an identical spec changes nothing.
package engine
