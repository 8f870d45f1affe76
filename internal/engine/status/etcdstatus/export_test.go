package etcdstatus

import "context"

// WaitSeen returns once the writer took the source's changes of stream up
// to rev (or ctx ended).
func (w *Writer) WaitSeen(ctx context.Context, stream string, rev uint64) error {
	return waitUntil(ctx, func() (bool, <-chan struct{}) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.seen[stream] >= rev, w.seenCh
	})
}

// WaitRevision returns once the mirror applied etcd revision rev (or
// later), or ctx ended.
func (m *Mirror) WaitRevision(ctx context.Context, rev int64) error {
	return waitUntil(ctx, func() (bool, <-chan struct{}) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.etcd >= rev, m.seen
	})
}

// waitUntil returns once check says done, checking again each time the
// channel it returned is closed, or when ctx ends.
func waitUntil(ctx context.Context, check func() (bool, <-chan struct{})) error {
	for {
		done, ch := check()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
