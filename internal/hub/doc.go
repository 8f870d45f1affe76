// Package hub is the application core between the transport (server/) and
// the machinery (engine/, store/): a push is checked (config.Check) while
// the store stages and hashes it, committed only if the check passed,
// acknowledged, then handed to the engine; an upload does the same chunk
// by chunk. Errors wrap the sentinels of errors.go.
//
// Guarantees:
//   - Stored, then published, never delayed by a sink (TestPushStoresThenPublishes).
//   - A rejected push stores nothing and touches no sink (TestRejectedPushChangesNothing).
//   - An abandoned push is "push abandoned" and commits nothing (TestAbandonedPushCommitsNothing).
//   - An upload is bounded by its header; a mismatch, truncation or bad check stores nothing; chunks are held once (TestUploadBoundedByItsHeader, TestUploadStoresThenPublishes, TestBadUploadChangesNothing, TestWriteChunkKeepsNoReference, FuzzUpload).
//   - Uploads in flight share one byte budget, given back however they end (server TestUploadBudget, TestUploadThatCannotStageGivesItsBudgetBack).
//   - Sink specs are bounded one by one and in all (TestSinkSpecBytesBounded).
//   - GetConfig of an unknown sink is NotFound naming it (TestSinkConfigOfUnknownSink).
//   - A sink its kind refuses to build is taken out of the store again (TestPutSinkRefusedByFactoryChangesNothing).
//   - At start every stream and applied record is loaded and each sink driven to the last ack (TestStartResumesStoredStreamsAndSeedsSinks, TestStartCountsEachSinkOnce).
//   - Each bound of Limits refuses by name and changes nothing, counting what exists, in flight included (TestStartWithMoreStreamsThanTheBound, TestConcurrentNewStreamsStayWithinTheBound; server TestMaxStreamsRefusedByName, server TestMaxSinksRefusedByName, server TestMaxWatchersRefusedByName, server TestMaxHeldConfigBytesRefusedByName).
//   - DeleteStream is refused while sinks read the stream and frees its place under MaxStreams (server TestDeleteStream).
//   - A rollback is a Push of a retained generation's bytes; a stale expected generation is ErrStale, the current hash unchanged, a generation no longer kept ErrNotFound naming the range (TestRollback, TestGenerationsPagesAndRetention).
package hub
