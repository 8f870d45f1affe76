// Package bolt is the embedded durable store.Store: one bbolt file (the hub
// uses <data-dir>/confighub.db) for the small records, and one file per
// stream's config bytes in the directory beside it (<file>.blobs/).
//
// A push is acknowledged after two steps (store.Stager), which the hub runs
// so that the slow one overlaps its check and hash:
//
//  1. StageConfig writes the bytes to a new file, <random id>.cfg, and
//     fsyncs it and the directory. Nothing refers to it yet: readers do
//     not see it. (It feeds the hub's SHA-256 as it writes, and hands each
//     chunk to the disk at once, so the fsync finds little left to do.)
//  2. Staged.Commit is one bbolt read-write transaction of a few pages: it
//     checks expected_generation, assigns generation = current+1 and
//     writes the meta record (hash, format, size, labels, accept time,
//     generation and the file's name). It returns once bbolt fsynced it
//     (data pages, then the meta page); NoSync is never set.
//
// A failed check discards the staged file (Discard); a conflict or an
// unchanged hash removes it too. The replaced generation's file is removed
// after the ack by a goroutine the store owns (Close stops it once it has
// removed what is pending).
//
// Guarantees, with kill -9 at any point:
//   - Before the commit's fsync returns nothing refers to the new file, so a
//     crash leaves the previous generation (the new file is an orphan).
//     After it, the meta names a file whose bytes and name were fsynced
//     before the transaction began, so an acknowledged generation is
//     never lost and never points at a missing file.
//   - A replaced file is removed only after the commit that replaced it is
//     on disk, so no meta ever names a removed file.
//   - Open removes every <id>.cfg that no meta names (staged but never
//     committed, or replaced but not yet removed); other files in the
//     directory are left alone. A commit whose transaction fails after
//     writing keeps its file: the meta may have reached the disk, so only
//     the next Open may decide.
//   - A meta whose file is missing, of another size, or whose bytes do not
//     hash to the meta's SHA-256 is an error wrapping store.ErrCorrupt that
//     names the file; Open checks every stream this way, and reads check
//     again. Nothing is reset silently.
//   - bbolt serialises write transactions, so two concurrent commits never
//     hand out the same generation.
//   - A bbolt file that cannot be read gives an error wrapping
//     store.ErrCorrupt that names it; Open walks every record (and bbolt's
//     page consistency check) before returning.
//   - A second process opening the same file fails after the lock timeout
//     with "data dir in use by another process".
//
// Layout (version 2): bucket "streams" holds one nested bucket per stream
// with a small JSON meta record ("meta"); "sinks" holds sink specs as
// deterministic proto binary; "applied" holds each sink's applied record
// as JSON; "info" holds the layout version. A layout 1 file (config bytes
// inline under "config") still reads; the next commit of a stream moves it
// to a file, and Open marks the file layout 2 so that an older hub refuses
// it instead of misreading it.
//
// RecordApplied uses bbolt's Batch: concurrent records from many sinks
// share one fsynced transaction instead of one fsync each.
package bolt
