package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultLeaseTTL is how long a replica stays a member after its last keepalive reached etcd.
const DefaultLeaseTTL = 5 * time.Second

// Membership keeps <prefix>/members/<id> alive under a lease and follows every
// member's key; registered while its lease is alive and key seen, a lost lease
// (the keepalive channel closes) unregisters it at once, and it registers again.
type Membership struct {
	cli    *clientv3.Client
	prefix string
	id     string
	ttl    time.Duration
	clock  clockwork.Clock
	log    *slog.Logger

	mu      sync.Mutex
	members map[string]bool
	alive   bool
	lease   clientv3.LeaseID
	changed chan struct{}
}

// NewMembership returns replica id's membership under prefix (log nil: none).
func NewMembership(cli *clientv3.Client, prefix, id string, ttl time.Duration, log *slog.Logger) *Membership {
	return &Membership{
		cli: cli, prefix: strings.TrimSuffix(prefix, "/"), id: id, ttl: cmp.Or(max(ttl, 0), DefaultLeaseTTL), clock: clockwork.NewRealClock(),
		log: cmp.Or(log, slog.New(slog.DiscardHandler)), members: map[string]bool{}, changed: make(chan struct{}, 1),
	}
}

// ID is this replica's id.
func (m *Membership) ID() string { return m.id }

func (m *Membership) membersPrefix() string { return m.prefix + "/members/" }

// Key is this replica's member key.
func (m *Membership) Key() string { return m.membersPrefix() + m.id }

// Changes is signalled (coalesced) whenever Members may have changed.
func (m *Membership) Changes() <-chan struct{} { return m.changed }

// Members returns the sorted live member ids and whether this replica is registered.
func (m *Membership) Members() (members []string, registered bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.members {
		members = append(members, id)
	}
	slices.Sort(members)
	return members, m.alive && m.members[m.id]
}

// Lease is the current lease, 0 when none is alive.
func (m *Membership) Lease() clientv3.LeaseID {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.alive {
		return 0
	}
	return m.lease
}

func (m *Membership) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Run keeps the lease and follows the members until ctx ends, then revokes the lease.
func (m *Membership) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { m.watchLoop(ctx) })
	m.leaseLoop(ctx)
	wg.Wait()
}

// retry waits before the next attempt; false when ctx ended.
func (m *Membership) retry(ctx context.Context) bool { return sleep(ctx, m.clock, m.ttl/5) }

func (m *Membership) leaseLoop(ctx context.Context) {
	for ctx.Err() == nil {
		id, ka, cancel, err := m.register(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("cluster: register failed; retrying", "error", err)
			}
			if !m.retry(ctx) {
				return
			}
			continue
		}
		m.mu.Lock()
		m.lease, m.alive = id, true
		m.mu.Unlock()
		m.signal()
		m.log.Info("cluster: registered", "lease", fmt.Sprintf("%x", int64(id)), "ttl", m.ttl)
		for range ka {
			// Each response is a renewed lease; the channel closes when the
			// lease is gone or cannot be renewed within its TTL.
		}
		cancel()
		m.mu.Lock()
		m.alive = false
		m.mu.Unlock()
		m.signal()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, _ = m.cli.Revoke(rctx, id)
		rcancel()
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("cluster: lease lost; stopped owning sinks, registering again")
	}
}

func (m *Membership) register(ctx context.Context) (clientv3.LeaseID, <-chan *clientv3.LeaseKeepAliveResponse, context.CancelFunc, error) {
	tctx, tcancel := context.WithTimeout(ctx, m.ttl)
	defer tcancel()
	secs := int64((m.ttl + time.Second - 1) / time.Second)
	g, err := m.cli.Grant(tctx, secs)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("grant a lease: %w", err)
	}
	if _, err := m.cli.Put(tctx, m.Key(), m.id, clientv3.WithLease(g.ID)); err != nil {
		return 0, nil, nil, fmt.Errorf("put %s: %w", m.Key(), err)
	}
	kctx, kcancel := context.WithCancel(ctx)
	ka, err := m.cli.KeepAlive(kctx, g.ID)
	if err != nil {
		kcancel()
		return 0, nil, nil, fmt.Errorf("keep lease alive: %w", err)
	}
	return g.ID, ka, kcancel, nil
}

func (m *Membership) watchLoop(ctx context.Context) {
	follow(ctx, m.cli, m.membersPrefix(), m.ttl, "list members", m.retry,
		func(err error) { m.log.Warn("cluster: member watch ended; listing again", "error", err) },
		func(resp *clientv3.GetResponse) {
			set := map[string]bool{}
			for _, kv := range resp.Kvs {
				set[strings.TrimPrefix(string(kv.Key), m.membersPrefix())] = true
			}
			m.mu.Lock()
			m.members = set
			m.mu.Unlock()
			m.signal()
		},
		func(evs []*clientv3.Event) {
			m.mu.Lock()
			for _, ev := range evs {
				id := strings.TrimPrefix(string(ev.Kv.Key), m.membersPrefix())
				m.members[id] = ev.Type == clientv3.EventTypePut
				if !m.members[id] {
					delete(m.members, id)
				}
			}
			m.mu.Unlock()
			m.signal()
		})
}

// follow lists the keys under prefix (an error prefixed by what), passes their changes
// to change until the watch fails, then warns and, after wait, again until ctx ends.
func follow(ctx context.Context, cli *clientv3.Client, prefix string, timeout time.Duration, what string, wait func(context.Context) bool,
	warn func(error), list func(*clientv3.GetResponse), change func([]*clientv3.Event)) {
	once := func() error {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := cli.Get(tctx, prefix, clientv3.WithPrefix())
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		list(resp)
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		for wr := range cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
			if err := wr.Err(); err != nil {
				return err
			}
			change(wr.Events)
		}
		return errors.New("watch closed")
	}
	for ctx.Err() == nil {
		err := once()
		if ctx.Err() != nil {
			return
		}
		warn(err)
		if !wait(ctx) {
			return
		}
	}
}

// sleep waits d on clock; false when ctx ends first.
func sleep(ctx context.Context, clock clockwork.Clock, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-clock.After(d):
		return true
	}
}
