// Package file is the built-in "file" sink: it writes each generation of its
// stream to one path.
//
// Guarantees:
//   - The file is replaced atomically: the bytes go to a temporary file in
//     the same directory, which is fsynced, renamed over the path, and the
//     directory is fsynced. A reader sees the old file or the new one, never
//     a partial write, and after a crash the path holds one whole generation.
//   - The file is readable by its owner only (0600): a Kong configuration
//     holds credentials and private keys.
//   - FORMAT_JSON renders the configuration as JSON (a YAML push is
//     converted once and shared with other sinks), FORMAT_YAML renders it as
//     YAML, and FORMAT_UNSPECIFIED writes the bytes exactly as pushed.
//   - A failure to write is retryable (the disk may come back); a YAML push
//     that cannot be converted is a permanent "render" error.
//
// Register it with Register(registry).
package file
