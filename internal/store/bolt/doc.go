// Package bolt is the embedded durable store.Store: one bbolt file (the hub
// uses <data-dir>/confighub.db) indexes every stream's retained
// generations, sinks, applied and convergence records; a generation of
// 64 KiB or more keeps its bytes in a record file of its own in the
// directory beside it (<file>.blobs/<random id>.rec), a smaller one inline
// in the index.
//
// A push is acknowledged once its index transaction is fsynced: the
// stage writes a large config's bytes to a new record file while the hub
// checks them, the commit flushes that file and its directory entry, then
// writes the generation's entry (with a small config's bytes) in a bbolt
// transaction shared by the commits that reach it together (streams.go,
// group). Every retained generation is in the index; its bytes stay on
// disk, and only each stream's current generation is held in memory.
//
// Guarantees, with kill -9 or power loss at any point:
//   - An acked generation is in the index, its record file flushed and
//     named before it (TestCrashAfterFlushBeforeIndex); a file the index
//     does not name (a stage never committed, a generation dropped) is
//     removed at the next Open, other files in the directory are left
//     alone (TestCrashAfterStageLosesOnlyTheStagedBytes,
//     TestCrashBeforeRemovalOfDroppedFile, TestOneFilePerRetainedGeneration).
//   - The data dir and the record directory are durable before anything is
//     acked in them (TestCreatesParentDirs, TestCreatedDirsAreFlushed).
//   - Generations are handed out under a per-stream lock held from the
//     expected_generation check to the index write, so a stream's acked
//     generations are contiguous (TestConcurrentCommitsContiguous).
//   - Open reads each stream's current generation (one file at a time: no
//     descriptor per stream) and checks it against its SHA-256: a record
//     that fails is store.ErrCorrupt naming the stream, the generation and
//     the file; an unreadable file is an I/O error naming the file and its
//     errno, and too many open files says to raise the limit
//     (TestOpenHoldsNoFilePerStream, TestBrokenRecordNamesItself,
//     TestIOErrorsSayWhatTheyAre). Open changes nothing before every
//     record it reads passed.
//   - A bbolt file that cannot be read is store.ErrCorrupt naming it, left
//     as it is (TestGarbageFileIsCorrupt, TestTruncatedFile,
//     TestOverwrittenPagesAreCorrupt, TestTruncatedFileLeavesNoLock); a
//     file of another data layout is refused (TestOtherLayoutRefused).
//   - A failed flush or index write is not acked and stops every later
//     commit ("restart to recover": a flush after a failed one proves
//     nothing; TestFailedFlushStopsCommits).
//   - Nothing unchecked or discarded is stored: a failed check, a conflict
//     or an unchanged hash removes the staged file
//     (TestStagedDiscardConflictUnchanged, TestCanceledStage); a staged
//     handle keeps nothing of the stage's context
//     (TestCommitAfterStageContextEnds).
//   - Close waits for commits under way and refuses later ones
//     (TestNoWriteAfterClose); a second process gets ErrInUse
//     (TestSecondOpenFailsInUse).
//   - A stream name or label that is not valid UTF-8 is refused
//     (TestNonUTF8Refused).
//
// Layout 4: bucket "streams" holds a bucket per stream, keyed by the 8-byte
// big-endian generation (its size, then its meta as JSON) and by the
// generation plus "d" (inline bytes); "blobs" names each record file's
// stream; "sinks", "applied", "converged" and "info" (layout, fingerprint
// key) hold the rest. RecordApplied and RecordConverged use bbolt's Batch.
package bolt
