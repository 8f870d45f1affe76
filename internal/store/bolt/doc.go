// Package bolt is the embedded durable store.Store: one bbolt file (the hub
// uses <data-dir>/confighub.db) for sinks, applied records and an index of
// the streams, and one record file per stream generation beside it
// (<file>.blobs/<id>.rec: the config bytes and their meta behind a
// checksummed header, format in rec.go).
//
// A push is acknowledged after one flush: StageConfig writes the bytes into a
// free record file (stage.go), Staged.Commit seals it and queues it for the
// flusher, which group-commits everything queued at once (group.go), and the
// background goroutine writes the index after the ack (background.go). The
// reasoning of each step is on the type that does it.
//
// Guarantees, with kill -9 or power loss at any point:
//   - Created directories are durable before anything is acked in them (TestCreatesParentDirs, TestCreatedDirsAreFlushed).
//   - An acked generation is never lost; a torn, unacked record is dropped (TestCrashAfterAckBeforeIndex, TestCrashTornRecordIsDropped, TestCrashNewestTornOlderReplayed).
//   - A recycled file's stale record is never replayed (TestCrashWhileStagingIntoRecycledFile, TestPowerLossMixesRecycledPages, TestEarlyRecycledFilesCrash).
//   - The indexed record is never recycled early, and is checked strictly at Open (TestIndexedFileNotRecycledWhileIndexLags, TestBrokenBlobIsCorrupt).
//   - Concurrent commits never share a generation; expected_generation has one winner (TestGroupCommitExpectedGeneration).
//   - Commits that reach the flusher together share one fdatasync (TestGroupCommitSharesOneFlush).
//   - The commit log replays after a crash, drops a torn batch and wraps around (TestCrashConcurrentPushersGroupCommit, TestCrashTornLogBatch, TestCommitLogWrapsAround).
//   - Stream names and labels that are not UTF-8 are refused (TestNonUTF8Refused).
//   - A streamed stage takes its announced size and commits what was written (TestStageStreamSize, TestStageStreamCommits).
//   - A discarded stage returns its file to the pool (TestStagedDiscardConflictUnchanged).
//   - A failed write or flush stops every later commit until a restart (TestFailedFdatasyncStopsCommits, TestFailedSealStopsCommits, TestLoggedRecordFlushFails, TestGroupCommitFailedLogFlush).
//   - Logged records are written to their files by the background (TestLoggedRecordsWrittenByBackground, TestIndexTrailsByDelayOrLag).
//   - Concurrent pushes reuse their files (TestConcurrentPushesReuseFiles).
//   - A bbolt file that cannot be read is corrupt, named (TestGarbageFileIsCorrupt, TestTruncatedFile, TestOverwrittenPagesAreCorrupt).
//   - A second process fails with "data dir in use" (TestSecondOpenFailsInUse).
//   - Nothing is written after Close (TestNoWriteAfterClose).
//   - Open removes files the index does not name (TestOneBlobPerStream, TestCrashBeforeRemovalOfReplacedBlob).
//
// Layout: bucket "streams" holds one bucket per stream with its index meta
// ("meta", JSON, naming the record file); "sinks" sink specs as deterministic
// proto binary; "applied" and "converged" JSON records; "info" the layout
// version. RecordApplied uses bbolt's Batch, so concurrent records share one
// fsynced transaction.
package bolt
