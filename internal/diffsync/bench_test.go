package diffsync

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkOneRouteChange measures a sync that changes one route of a
// synced configuration (dump, diff, one PUT) against the emulator, by
// destination size; each iteration flips the route back and forth.
func BenchmarkOneRouteChange(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			e := newEnv(b)
			s := e.syncer(b, e.url, Options{})
			raw := bigConfig(n)
			orig, changed := loadConfig(b, raw, 1), loadConfig(b, changeFirstRoute(b, raw), 2)
			ctx := context.Background()
			if _, err := s.Sync(ctx, orig); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				cfg := orig
				if i%2 == 0 {
					cfg = changed
				}
				if _, err := s.Sync(ctx, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
