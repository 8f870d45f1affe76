// Package bolt is the embedded durable store.Store: one bbolt file (the hub
// uses <data-dir>/confighub.db) for sinks, applied records and an index of
// the streams, and one record file per stream generation in the directory
// beside it (<file>.blobs/<random id>.rec), which holds the config bytes
// and their meta (stream, generation, SHA-256, format, size, labels, accept
// time) behind a checksummed header (format in rec.go).
//
// A push is acknowledged after one flush (store.Stager; from 64 KiB on the
// hub runs the stage beside its check and hash, below it after them):
//
//  1. StageConfig writes the bytes into a free record file at offset 4096
//     and, from 64 KiB on, starts their write-back (sync_file_range),
//     feeding the hub's SHA-256 as it goes. No flush, no header: nothing refers to them.
//     The free file comes from a pool: a replaced generation's file
//     (recycled, its name durable since its own commit, its blocks
//     allocated, so the overwrite and its flush need no journal commit)
//     or a new file whose directory entry was fsynced before it joined the
//     pool. With an empty pool the stage creates one and fsyncs the
//     directory while it writes. A stage below 64 KiB (deferMax) writes
//     nothing (it only feeds tee; the hub passes none: it has the hash
//     by then): its bytes are written with their meta and
//     header in one system call (pwritev) when the record is made
//     durable in its own file, or after the ack when it is made durable
//     through the commit log (step 3). The crash tests whose window differs
//     between the two run at both sizes (TestFailedSealStopsCommits,
//     TestFailedFdatasyncStopsCommits, TestLoggedRecordFlushFails,
//     TestCrashWhileStagingIntoRecycledFile,
//     TestCrashConcurrentPushersGroupCommit).
//  2. Staged.Commit takes the stream's commit lock, checks
//     expected_generation against the stream's last sealed generation,
//     writes the meta record after the bytes and the header at offset 0
//     (no flush; a deferred stage's are only encoded), queues the file
//     for the flusher goroutine and releases
//     the lock; it returns once a flush covered its record. The flusher
//     takes everything queued at once (group commit, group.go): a batch of
//     one record is fdatasynced in its file; a batch of several appends the
//     small ones (up to 256 KiB) as entries to the commit log
//     (<file>.log) and fdatasyncs the log once, larger ones fdatasync
//     their own files beside it. Then the batch is acked, in queue order,
//     and the streams' generations move on in memory.
//  3. After the ack, the store's background goroutine writes (when they
//     are not in them yet) and fdatasyncs the record files of the newest
//     generations acked through the log, then
//     writes their meta records to the bbolt index (one fsynced
//     transaction), then recycles the files they replaced into the pool
//     (at least 2 kept, and as many as were ever out of it at once, staged
//     or replaced and waiting for the index, up to 128; others removed), so
//     rounds of concurrent pushes reuse their files and create none
//     (TestConcurrentPushesReuseFiles). A committed record's file stays
//     open (up to 256 of them) until it is recycled, and pool files keep
//     their descriptors, so a stage opens no file. Once the index covers
//     every entry of the log, the log starts a new epoch and is written
//     from its start again. The goroutine does this for all the records
//     acked since its last run, 50 ms (indexDelay) after the first of them,
//     at once when 1,024 records (TestIndexTrailsByDelayOrLag, with the
//     delay) or 4 MiB of log entries wait, and at Close: under a steady load the index
//     and its flushes follow many batches, not each one. That lag bounds
//     what Open replays. A replaced generation that was acked through
//     the log and never written to its file (the goroutine had not taken
//     it yet) is recycled at once, without waiting for the index
//     (TestEarlyRecycledFilesCrash).
//
// Guarantees, with kill -9 or power loss at any point:
//   - The data dir and the record directory are durable before anything
//     is acked in them: Open flushes the parent of each directory it
//     creates (TestCreatesParentDirs, TestCreatedDirsAreFlushed).
//   - An acked generation's record was fdatasynced (bytes, meta, header,
//     and the size and blocks to read them; in its own file, or as an
//     entry of the commit log, see group commit below) and its name was durable
//     before its stage began (pool) or before its commit (new file). At
//     Open, every record newer than the index is read: per stream, the
//     highest generation whose header checksum passes and whose bytes hash
//     to its meta's SHA-256 is flushed again (kill -9 may have left it in
//     the page cache only), the index is updated to name it, and the
//     others go. So an acked generation is never lost, and a torn record
//     (a crash before its flush returned: never acked) is dropped, its
//     generation handed out again (TestCrashAfterAckBeforeIndex,
//     TestCrashTornRecordIsDropped, TestCrashNewestTornOlderReplayed).
//   - The header sits at a fixed offset the config bytes never reach, so
//     no payload can forge a record.
//   - A recycled file keeps its stale header until it is sealed again. A
//     file is recycled only after the index names a newer generation of
//     its stream (the index only grows), so at Open a stale record is
//     never above the index and never replayed, whether the bytes staged
//     over it are different, torn or the same again
//     (TestCrashWhileStagingIntoRecycledFile, TestPowerLossMixesRecycledPages).
//     The one exception is a file whose record was acked through the log
//     and never written to it: it still holds what it held in the pool (a
//     stale record the index passed, or none), and a newer generation of
//     its stream is durable before it is recycled, so Open never restores
//     the log entry naming it, whatever record the file holds next
//     (TestEarlyRecycledFilesCrash: kill -9 and power loss after rounds of
//     reuse with no index written).
//   - The record the index names is never recycled before the index names
//     a newer one (TestIndexedFileNotRecycledWhileIndexLags), so Open
//     checks it strictly (TestBrokenBlobIsCorrupt): missing, short, a bad
//     header or checksum, another stream or generation, or bytes that do
//     not hash to the SHA-256 is an error wrapping store.ErrCorrupt that
//     names the file. Nothing is reset silently. (A record newer than the
//     index that fails its checks is indistinguishable from a torn,
//     unacked one and is dropped: that window is the time between an ack
//     and the next index write: about 50 ms (indexDelay) and the flushes
//     before it, or until the next run after a failed index write.)
//   - Generations are handed out in memory under a per-stream commit lock
//     held until the record is queued for the flusher, which flushes and
//     acks in queue order (the bbolt file lock keeps a second process
//     out), so two concurrent commits never get the same one, the acked
//     generations of a stream are contiguous, and expected_generation is
//     checked against the last sealed one, which is acked or the store
//     fails (TestGroupCommitExpectedGeneration: one winner per round).
//   - Group commit: commits that reach the flusher together, of one
//     stream or many, share one fdatasync (TestGroupCommitSharesOneFlush),
//     and none is acked before the flush that covers it. A crash after
//     concurrent pushers were acked through the log, before the index or
//     the records' own files were flushed, opens at each stream's last ack
//     with the record files as written (kill -9) and with every record
//     file newer than the index lost (power loss): Open replays the log's
//     entries like record files, writing the winner back into the file its
//     entry names (TestCrashConcurrentPushersGroupCommit). A batch torn in
//     the log (power loss during its flush, never acked) is dropped from
//     the first entry that does not check; entries before it that read
//     back whole may be replayed, like a whole record file of an unacked
//     commit (TestCrashTornLogBatch). The index names only records flushed
//     in their own file, and the log is reused only once the index covers
//     every entry of its epoch; entries of an older epoch are never read
//     (TestCommitLogWrapsAround).
//   - A record names its stream in its meta, and Open assigns it by that
//     name, so the store refuses a stream name or label that is not valid
//     UTF-8 (JSON would store another one) (TestNonUTF8Refused).
//   - A streamed stage (store.StreamStager, an upload's chunks) writes
//     each piece at its offset as it arrives, takes no more than its
//     announced size and ends only whole (TestStageStreamSize); its
//     Commit takes the bytes the caller wrote and kept (the hub's upload)
//     and stores them as they are, reading nothing back
//     (TestStageStreamCommits).
//   - Nothing unchecked is stored: the hub commits only after its check
//     passed; a failed check, a conflict or an unchanged hash returns the
//     staged file to the pool without a header
//     (TestStagedDiscardConflictUnchanged).
//   - A commit whose write or flush fails may or may not be on disk (with
//     group commit: every commit of the batch, TestGroupCommitFailedLogFlush;
//     a record file of a logged record that fails its flush before the
//     index names it, likewise): the store then refuses every later stage
//     and commit ("restart to recover"), and its index names nothing more,
//     even once a flush would succeed again (after a failed
//     fsync the kernel may have marked the lost pages clean: a later one
//     proves nothing; TestLoggedRecordFlushFails: a power loss then opens
//     at the last acks, from the log); the hub answers Unavailable. The next Open decides
//     from what is on disk (it may replay that unacked record, flushed
//     again, if it reads back whole) (TestFailedFdatasyncStopsCommits,
//     TestFailedSealStopsCommits).
//   - An index write that fails is retried at the next run; the
//     records are durable meanwhile and Open replays them. Close reports
//     it.
//   - Readers read the stream's current meta from memory and its file
//     under blobMu (shared), recycling takes it exclusively, so no reader
//     sees a file being overwritten. A small record acked through the log
//     is read from memory until the background wrote it to its file; the
//     generations a newer one replaced before that are never written to
//     theirs (TestLoggedRecordsWrittenByBackground).
//   - A bbolt file that cannot be read gives an error wrapping
//     store.ErrCorrupt that names it; Open walks every record (and bbolt's
//     page consistency check) before returning (TestGarbageFileIsCorrupt,
//     TestTruncatedFile, TestOverwrittenPagesAreCorrupt).
//   - A second process opening the same file fails after the lock timeout
//     with "data dir in use by another process" (TestSecondOpenFailsInUse).
//   - Close refuses every later stage and commit and waits for those under
//     way before it releases the file lock: once it returns nothing is
//     written, so the next Open (which removes files it does not know of)
//     never races a late commit (TestNoWriteAfterClose).
//   - Open removes every file of ours (<id>.rec, <id>.cfg) the index does
//     not name (staged, torn, replaced, free); other files in the
//     directory are left alone. After a start there is one file per stream
//     (TestOneBlobPerStream, TestCrashBeforeRemovalOfReplacedBlob).
//
// Layout (version 3): bucket "streams" holds one nested bucket per stream
// with its index meta record ("meta", JSON, naming the record file);
// "sinks" holds sink specs as deterministic proto binary; "applied" holds
// each sink's applied record as JSON; "converged" each stream's last
// convergence (generation and time) as JSON, created at Open in a file
// that predates it (TestConvergedBucketAddedToAnOlderFile); "info" holds
// the layout version.
// Older data dirs are moved at Open: a layout 1 stream (bytes inline under
// "config") or layout 2 stream (bytes in a plain <id>.cfg named by the
// meta) is written to a record file of the same generation (flushed, name
// flushed), then one transaction points the index at it and marks the
// file layout 3, so that an older hub refuses it instead of misreading it.
// A crash in between leaves a record no newer than the index: removed at
// the next Open, which moves the stream again.
//
// RecordApplied uses bbolt's Batch: concurrent records from many sinks
// share one fsynced transaction instead of one fsync each.
package bolt
