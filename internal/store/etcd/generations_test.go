package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/etcd"
	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/storetest"
)

// TestKeepsTheLastGenerations: with WithRetention(store.Retention{History: 2}) the bytes of
// the last two generations are readable (from another Store, as a replica
// reads them) and nothing older stays in etcd, staged chunks of large
// configs included.
func TestKeepsTheLastGenerations(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	p := prefixFor(t)
	s := newStore(t, cli, etcd.WithPrefix(p), etcd.WithRetention(store.Retention{History: 2}), etcd.WithChunkSize(64))
	other := newStore(t, srv.Client(t), etcd.WithPrefix(p))
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		if _, _, err := s.CommitConfig(ctx, storetest.NewStream("p", storetest.Cfg(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	for gen := uint64(1); gen <= 4; gen++ {
		c, err := other.GetGeneration(ctx, "p", gen)
		if gen <= 2 {
			if !errors.Is(err, store.ErrNotRetained) || !strings.Contains(fmt.Sprint(err), "keeps generations 3-4") {
				t.Errorf("generation %d: %v, want ErrNotRetained (keeps 3-4)", gen, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("generation %d: %v", gen, err)
		} else if string(c.Raw) != string(storetest.Cfg(int(gen))) {
			t.Errorf("generation %d: %q", gen, c.Raw)
		}
	}
	var gens []string
	for _, k := range keys(t, cli, p+"configs/p/") {
		if g := strings.SplitN(strings.TrimPrefix(k, p+"configs/p/"), "-", 2)[0]; !slices.Contains(gens, g) {
			gens = append(gens, g)
		}
	}
	if want := []string{fmt.Sprintf("%020d", 3), fmt.Sprintf("%020d", 4)}; !slices.Equal(gens, want) {
		t.Errorf("chunks of generations %v in etcd, want %v", gens, want)
	}
	if h := keys(t, cli, p+"history/p/"); len(h) != 2 {
		t.Errorf("history keys %v, want the last 2", h)
	}
}
