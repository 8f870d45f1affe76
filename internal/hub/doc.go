// Package hub is the hub's application core, between the transport
// (server/) and the machinery (engine/, store/): it owns the order of
// operations that make the product's promises hold.
//
//   - A push is checked (config.Check) while the store writes the bytes
//     aside and hashes them as it writes (store.Store.StageConfig; a store
//     without it: check and hash in parallel, then CommitConfig; below
//     the store's DeferBelow (store.Store.DeferBelow, 64 KiB for the bolt
//     store), which stages such bytes without writing them: check,
//     hash, then stage, on the caller's goroutine; both paths in
//     TestRejectedPushChangesNothing); only a
//     push that passed the check is committed (the store assigns the
//     generation and enforces expected_generation), and only then
//     acknowledged; the engine gets the new generation after the commit,
//     and never delays the ack (TestPushStoresThenPublishes).
//   - A push that is rejected stores nothing and touches no sink: its
//     staged bytes are discarded (TestRejectedPushChangesNothing).
//   - A push whose context ends while its bytes are staged or before
//     their commit (the client went away) is ErrUnavailable, "push
//     abandoned", on both paths, never a store failure, and
//     commits nothing: the stream keeps its generation, the engine gets
//     nothing and no staged file is left (TestAbandonedPushCommitsNothing).
//   - An upload's size is bounded by its header and its SHA-256 computed
//     during receipt; a mismatch, a truncation or a failed check stores
//     nothing. A JSON upload on a store that stages streams (the bolt
//     store) is checked (config.Scanner), hashed and written to disk chunk
//     by chunk as it arrives, by two workers (one checks, one writes and
//     hashes) while the transport receives the next chunk, so the ack
//     follows the last chunk by about one flush, a bad byte ends the
//     upload without waiting for the rest, and the bytes are held in
//     memory once: each chunk, handed over as the transport's receive
//     buffers (WriteChunk), is copied into the one slice the workers read
//     and the sinks get after the commit, and no reference to the buffers
//     is kept (TestUploadStoresThenPublishes, TestBadUploadChangesNothing,
//     TestWriteChunkKeepsNoReference; peak RSS in docs/performance.md,
//     scenario 1). A YAML upload (its check converts the whole document)
//     or one on another store is assembled in memory and pushed.
//   - The uploads in flight share one budget of bytes (BeginUpload,
//     WithUploadBudgetBytes, default DefaultUploadBudgetBytes): an upload's
//     announced total_size is taken from its header before any chunk is
//     read, an upload that does not fit is ErrTooLarge saying so, and the
//     share comes back when the upload ends (Abort), acked, refused or
//     abandoned (server TestUploadBudget), or when BeginUpload itself
//     fails after taking it, as when the store cannot open the stage
//     (TestUploadThatCannotStageGivesItsBudgetBack).
//   - A sink spec is at most 256 KiB (ErrInvalid) and all specs together
//     at most 32 MiB (ErrTooLarge), so ListSinks, which answers them all
//     at once, fits the message limit (TestSinkSpecBytesBounded). The
//     check asks the engine for one spec and the specs' total size, not for
//     a copy of every spec, so putting N sinks copies no spec beside the
//     one put (engine TestSinkAndSpecBytes), and the engine keeps that
//     total as specs come, change and go (sinks and replicas' peers), so
//     asking it costs the same however many sinks there are (engine
//     TestSpecBytesTotalFollowsEveryChange).
//   - GetConfig of a sink tells an unknown sink (ErrNotFound naming it)
//     from one that applied, or failed, nothing yet; learning that the
//     sink exists copies no spec when the engine answers it (SinkSpecs'
//     HasSink; TestSinkConfigOfUnknownSink, engine TestSinkAndSpecBytes).
//   - A sink put at run time is validated, stored, then started (and taken
//     out of the store again when its kind refuses to build it;
//     TestPutSinkRefusedByFactoryChangesNothing); the sinks file is put at
//     every start (it is the start-up seed and wins for the names it lists).
//   - At start, every stream and every sink's applied record is loaded and
//     each sink is driven to the last acknowledged generation
//     (TestStartResumesStoredStreamsAndSeedsSinks, TestStartCountsEachSinkOnce).
//
// Errors are returned wrapped around the sentinels in errors.go; server/
// maps them to gRPC codes, once.
package hub
