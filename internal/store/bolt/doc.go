// Package bolt is the embedded durable store.Store: one bbolt file
// (<data-dir>/confighub.db) indexes everything; a generation from 64 KiB
// keeps its bytes in a record file of its own (<file>.blobs/<id>.rec),
// written while the hub checks it, a smaller one inline. A push is acked
// once its record file and then its (shared) index transaction are
// flushed. Only each stream's current generation is held in memory.
//
// Layout 4: bucket "streams" holds a bucket per stream, keyed by the 8-byte
// big-endian generation (size, then meta JSON) and that plus "d" (inline
// bytes); "blobs" names each record file's stream; "sinks", "applied",
// "converged" and "info" (layout, fingerprint key) hold the rest.
//
// Guarantees, with kill -9 or power loss at any point:
//   - An acked generation's record file is flushed and named before the index names it (TestCrashAfterFlushBeforeIndex).
//   - A file the index does not name is removed at the next Open, others left alone (TestCrashAfterStageLosesOnlyTheStagedBytes, TestCrashBeforeRemovalOfDroppedFile, TestOneFilePerRetainedGeneration).
//   - The data dir and record directory are durable before anything is acked in them (TestCreatesParentDirs, TestCreatedDirsAreFlushed).
//   - A stream's acked generations are contiguous (TestConcurrentCommitsContiguous).
//   - Open reads each current generation one file at a time and checks its SHA-256; a bad record is store.ErrCorrupt naming stream, generation and file, an I/O error names file and errno (TestOpenHoldsNoFilePerStream, TestBrokenRecordNamesItself, TestIOErrorsSayWhatTheyAre).
//   - An unreadable bbolt file is store.ErrCorrupt naming it, left as is (TestGarbageFileIsCorrupt, TestTruncatedFile, TestOverwrittenPagesAreCorrupt, TestTruncatedFileLeavesNoLock); another layout is refused (TestOtherLayoutRefused).
//   - A failed flush or index write is not acked and stops every later commit: restart to recover (TestFailedFlushStopsCommits).
//   - A failed check, conflict or unchanged hash stores nothing (TestStagedDiscardConflictUnchanged, TestCanceledStage); a staged handle keeps nothing of the stage's context (TestCommitAfterStageContextEnds).
//   - Close waits for commits under way and refuses later ones (TestNoWriteAfterClose); a second process gets ErrInUse (TestSecondOpenFailsInUse).
//   - A stream name or label that is not valid UTF-8 is refused (TestNonUTF8Refused).
package bolt
