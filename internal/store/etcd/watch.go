package etcd

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/confighub/confighub/internal/store"
)

// watchBackoff is the wait before a failed watch is opened again.
const watchBackoff = 500 * time.Millisecond

// Watch implements store.Shared: other Stores' changes in commit order from after
// the last List* (or now) until ctx or the Store ends; a slow reader delays only it.
func (s *Store) Watch(ctx context.Context) <-chan store.Event {
	ch := make(chan store.Event)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	s.mu.Lock()
	from, known, closed := s.listRev, maps.Clone(s.listedSinks), s.closed
	if !closed {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if closed {
		stop()
		cancel()
		close(ch)
		return ch
	}
	if from == 0 {
		// "Now" is read before returning, so a later change is delivered.
		if resp, err := s.cli.Get(ctx, s.key(kStreams, ""), clientv3.WithCountOnly()); err == nil {
			from = resp.Header.Revision
		}
	}
	go func() {
		defer s.wg.Done()
		defer close(ch)
		defer stop()
		defer cancel()
		s.watch(ctx, ch, from, known)
	}()
	return ch
}

// watch runs from after revision last (0: now) until ctx is done; known: the reader's sinks.
func (s *Store) watch(ctx context.Context, ch chan<- store.Event, last int64, known map[string]bool) {
	for ctx.Err() == nil {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if last > 0 {
			opts = append(opts, clientv3.WithRev(last+1))
		}
		// RequireLeader: a member cut off from its cluster ends the watch.
		wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), s.prefix, opts...)
		compacted := false
	recv:
		for wresp := range wch {
			if err := wresp.Err(); err != nil {
				compacted = errors.Is(err, rpctypes.ErrCompacted) || wresp.CompactRevision != 0
				break
			}
			for _, ev := range wresp.Events {
				if err := s.deliver(ctx, ch, ev, known); err != nil {
					break recv // reopen after the last delivered
				}
				last = ev.Kv.ModRevision
			}
			if last == 0 {
				last = wresp.Header.Revision
			}
		}
		if compacted && ctx.Err() == nil {
			last = s.resync(ctx, ch, known)
		} else if !s.sleep(ctx, watchBackoff) {
			return
		}
	}
}

// sleep waits d on the store's clock; false when ctx ends first.
func (s *Store) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-s.clock.After(d):
		return true
	}
}

func send(ctx context.Context, ch chan<- store.Event, e store.Event) error {
	select {
	case ch <- e:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deliver sends the store.Event of ev, if it is one; an error means not sent.
func (s *Store) deliver(ctx context.Context, ch chan<- store.Event, ev *clientv3.Event, known map[string]bool) error {
	key := string(ev.Kv.Key)
	rev := ev.Kv.ModRevision
	s.writing.Lock() // wait for this Store's writes to know their revisions
	//nolint:staticcheck // an empty critical section: a barrier, not a guard
	s.writing.Unlock()
	switch {
	case strings.HasPrefix(key, s.key(kStreams, "")):
		if ev.Type != mvccpb.PUT || s.isOwn(rev) {
			return nil
		}
		name := strings.TrimPrefix(key, s.key(kStreams, ""))
		st, err := s.readStream(ctx, name, ev.Kv.Value, rev)
		if errors.Is(err, rpctypes.ErrCompacted) {
			st, err = s.GetStream(ctx, name) // the newest will do
		}
		if err != nil {
			return err
		}
		return send(ctx, ch, store.Event{Config: st})
	case strings.HasPrefix(key, s.key(kSinks, "")):
		name := strings.TrimPrefix(key, s.key(kSinks, ""))
		// Own changes are not sent, but the reader knows them.
		if delete(known, name); ev.Type != mvccpb.DELETE {
			known[name] = true
		}
		if s.isOwn(rev) {
			return nil
		}
		if ev.Type == mvccpb.DELETE {
			return send(ctx, ch, store.Event{SinkDeleted: name})
		}
		sp, err := decodeSink(ev.Kv.Key, ev.Kv.Value)
		if err != nil {
			return nil // a spec this hub cannot read is skipped, not retried forever
		}
		return send(ctx, ch, store.Event{SinkPut: sp})
	}
	return nil
}

// resync sends every stream, sink and known sink's deletion after a compaction,
// retrying until ctx is done; it returns the revision to continue from.
func (s *Store) resync(ctx context.Context, ch chan<- store.Event, known map[string]bool) int64 {
	for {
		if rev, err := s.resyncOnce(ctx, ch, known); err == nil || !s.sleep(ctx, watchBackoff) {
			return rev
		}
	}
}

func (s *Store) resyncOnce(ctx context.Context, ch chan<- store.Event, known map[string]bool) (int64, error) {
	streams, rev, err := s.listStreams(ctx)
	if err != nil {
		return 0, err
	}
	resp, err := s.cli.Get(ctx, s.key(kSinks, ""), clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return 0, err
	}
	for _, c := range streams {
		if err := send(ctx, ch, store.Event{Config: c}); err != nil {
			return 0, err
		}
	}
	present := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		present[strings.TrimPrefix(string(kv.Key), s.key(kSinks, ""))] = true
		if sp, err := decodeSink(kv.Key, kv.Value); err == nil {
			if err := send(ctx, ch, store.Event{SinkPut: sp}); err != nil {
				return 0, err
			}
		}
	}
	for name := range known {
		if !present[name] {
			if err := send(ctx, ch, store.Event{SinkDeleted: name}); err != nil {
				return 0, err
			}
		}
	}
	clear(known)
	maps.Copy(known, present)
	return rev, nil
}
