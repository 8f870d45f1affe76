// Package file is the "file" sink: it writes each generation to one path
// under the hub's --file-sink-root, replaced atomically.
//
// Guarantees:
//   - A path that leaves the root is an invalid spec; every write resolves it again inside the root (TestFactoryConfinesPaths, TestWriteRefusesLinkSwappedIn).
//   - Missing folders are created, their parents fsynced (TestApplyCreatesFolders).
//   - A failed write leaves the old file and no temporary one (TestWriteAtomicFailureLeavesNoTempFile).
//   - The file is readable by its owner only: it holds credentials (TestApplyWritesOwnerOnlyFile).
//   - FORMAT_JSON, FORMAT_YAML, or the bytes as pushed (TestApplyRendersJSON, TestApplyRendersYAML, TestApplyWritesBytesAsPushed).
//   - A write error is retryable "unavailable" (TestApplyWriteErrorIsRetryable).
package file
