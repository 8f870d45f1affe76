package hub

import (
	"fmt"
	"sync"
)

// DefaultUploadBudgetBytes is the default hub-wide budget of bytes that
// uploads in flight may hold: two uploads of the largest default
// configuration at once.
const DefaultUploadBudgetBytes = 2 * DefaultMaxConfigBytes

// uploadBudget is the hub-wide count of bytes announced by the uploads in
// flight (each upload's total_size, from its header until it ends). It
// never waits: an upload that does not fit is refused before any of its
// bytes are read, so the hub's memory stays bounded however many clients
// upload at once.
type uploadBudget struct {
	mu    sync.Mutex
	limit int64 // <= 0: no budget
	held  int64
	count int
}

// reserve takes n bytes of the budget and returns the function that gives
// them back (call it once, when the upload ended, acked or not).
func (b *uploadBudget) reserve(n int64) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.held+n > b.limit {
		return nil, fmt.Errorf("%w: an upload of %d bytes does not fit the hub's budget of %d bytes for uploads in flight (--upload-budget-bytes): %d bytes are held by %d upload(s); retry when one has finished",
			ErrTooLarge, n, b.limit, b.held, b.count)
	}
	b.held += n
	b.count++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.held -= n
			b.count--
			b.mu.Unlock()
		})
	}, nil
}

// WithUploadBudgetBytes bounds the bytes all uploads in flight may hold
// together (their announced total_size); 0 removes the bound.
func WithUploadBudgetBytes(n int64) Option { return func(h *Hub) { h.uploads.limit = n } }

// UploadsInFlight is what the uploads in flight hold of the budget: bytes
// announced and how many uploads.
func (h *Hub) UploadsInFlight() (bytes int64, uploads int) {
	h.uploads.mu.Lock()
	defer h.uploads.mu.Unlock()
	return h.uploads.held, h.uploads.count
}
