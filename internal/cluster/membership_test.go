package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confighub/confighub/test/etcdtest"
)

// waitMembers waits (on Changes, bounded) until cond holds.
func waitMembers(t *testing.T, m *Membership, what string, cond func(members []string, registered bool) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if cond(m.Members()) {
			return
		}
		select {
		case <-m.Changes():
		case <-deadline:
			ms, reg := m.Members()
			t.Fatalf("%s: %s: members %v registered %v", m.ID(), what, ms, reg)
		}
	}
}

func runMembership(t *testing.T, m *Membership) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func TestMembershipSeesJoinAndLeave(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	a := NewMembership(cli, "/t", "a", 2*time.Second, nil)
	b := NewMembership(cli, "/t", "b", 2*time.Second, nil)
	runMembership(t, a)
	stopB := runMembership(t, b)
	both := func(ms []string, reg bool) bool { return reg && slices.Equal(ms, []string{"a", "b"}) }
	waitMembers(t, a, "both members", both)
	waitMembers(t, b, "both members", both)
	// Leaving revokes the lease: the others see it at once, not after the TTL.
	stopB()
	waitMembers(t, a, "b left", func(ms []string, reg bool) bool { return reg && slices.Equal(ms, []string{"a"}) })
	if _, reg := b.Members(); reg {
		t.Fatal("b still counts itself registered after stopping")
	}
}

func TestMembershipReRegistersAfterLeaseLoss(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	a := NewMembership(cli, "/t", "a", 2*time.Second, nil)
	runMembership(t, a)
	waitMembers(t, a, "registered", func(ms []string, reg bool) bool { return reg })
	old := a.Lease()
	// etcd drops the lease (as after a hang longer than the TTL).
	if _, err := cli.Revoke(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	sawLoss := false
	waitMembers(t, a, "lost then registered again", func(ms []string, reg bool) bool {
		if !reg {
			sawLoss = true
		}
		return reg && a.Lease() != old && a.Lease() != 0
	})
	t.Logf("lease %x replaced by %x (loss observed as unregistered: %v)", int64(old), int64(a.Lease()), sawLoss)
}
