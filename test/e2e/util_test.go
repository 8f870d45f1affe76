package e2e

import (
	"bytes"
	"encoding/base64"
	"sync"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// syncWriter collects a child process's output safely for concurrent reads.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
