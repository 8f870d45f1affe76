// Package file is the built-in "file" sink: it writes each generation of its
// stream to one path.
//
// Guarantees:
//   - Every file sink writes under one root directory (Register's root;
//     the hub's --file-sink-root). file.path is relative to the root, or
//     an absolute path under it. A path that leaves the root (../, an
//     absolute path elsewhere, a symbolic link that resolves outside it)
//     is sink.ErrInvalidSpec, so PutSink answers InvalidArgument and a
//     sinks file fails the start (TestFactoryConfinesPaths). Every write
//     resolves the path again inside the root (os.Root), so a folder
//     swapped for a link out of it later fails the write instead of
//     escaping (TestWriteRefusesLinkSwappedIn).
//   - Missing folders under the root, and the root itself, are created on
//     write, each new entry's parent fsynced (TestApplyCreatesFolders).
//   - The file is replaced atomically: the bytes go to a temporary file in
//     the same directory, which is fsynced, renamed over the path, and the
//     directory is fsynced. A reader sees the old file or the new one, never
//     a partial write, and after a crash the path holds one whole generation
//     (TestWriteAtomicFailureLeavesNoTempFile: a failed write leaves the
//     old file and no temporary one).
//   - The file is readable by its owner only (0600): a Kong configuration
//     holds credentials and private keys (TestApplyWritesOwnerOnlyFile).
//   - FORMAT_JSON renders the configuration as JSON (a YAML push is
//     converted once and shared with other sinks), FORMAT_YAML renders it as
//     YAML, and FORMAT_UNSPECIFIED writes the bytes exactly as pushed
//     (TestApplyRendersJSON, TestApplyRendersYAML,
//     TestApplyWritesBytesAsPushed).
//   - A failure to write is retryable, sink.CodeUnavailable (the disk may
//     come back; TestApplyWriteErrorIsRetryable); a YAML push
//     that cannot be converted is a permanent sink.CodeInvalid error.
//
// Register it with Register(registry, root).
package file
