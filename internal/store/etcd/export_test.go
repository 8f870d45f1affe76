package etcd

// WithChunkSize sets the chunk size (default 1 MiB), below etcd's
// --max-request-bytes.
func WithChunkSize(n int) Option { return func(s *Store) { s.chunkSize = max(n, 1) } }
