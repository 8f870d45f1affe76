// Package bolt is the embedded durable store.Store, one bbolt file
// (the hub uses <data-dir>/confighub.db).
//
// Guarantees:
//   - CommitConfig is one bbolt read-write transaction: it checks
//     expected_generation, assigns generation = current+1 and writes the
//     config bytes and their meta (hash, format, labels, accept time,
//     generation). It returns only after the transaction is fsynced (data
//     pages, then the meta page); NoSync is never set. A crash at any point
//     leaves either the previous or the new generation, never a mix.
//   - bbolt serialises write transactions, so two concurrent commits never
//     hand out the same generation.
//   - A file that cannot be read gives an error wrapping store.ErrCorrupt
//     that names the file; the store is never reset silently. Open walks
//     every record (and bbolt's page consistency check) before returning.
//   - A second process opening the same file fails after the lock timeout
//     with "data dir in use by another process".
//
// Layout: bucket "streams" holds one nested bucket per stream with the
// config bytes under their own key ("config") and a small JSON meta record
// ("meta"); "sinks" holds sink specs as deterministic proto binary;
// "applied" holds each sink's applied record as JSON; "info" holds the
// layout version.
//
// RecordApplied uses bbolt's Batch: concurrent records from many sinks
// share one fsynced transaction instead of one fsync each.
package bolt
