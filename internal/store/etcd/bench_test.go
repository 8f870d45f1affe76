package etcd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store/etcd"
	"github.com/confighub/confighub/test/etcdtest"
)

// BenchmarkCommit measures CommitConfig against an embedded single-member
// etcd (same machine, default 1.5 MiB request limit) next to a plain
// write+fsync of the same bytes, interleaved. Reported: etcd-ms, fsync-ms
// and ratio.
//
//	go test -run '^$' -bench BenchmarkCommit -benchtime 10x ./internal/store/etcd
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1 << 20, 20 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			// A fresh member per case: history is not compacted here, and a
			// growing backend would bias later cases.
			srv := etcdtest.Start(b)
			cli := srv.Client(b)
			s := etcd.New(cli, etcd.WithPrefix(fmt.Sprintf("/bench/%d/", size)))
			defer s.Close()
			raw := make([]byte, size)
			for i := range raw {
				raw[i] = byte('a' + i%26)
			}
			ctx := context.Background()
			next := func(i int) *config.Config {
				copy(raw, fmt.Sprintf("%08d", i))
				return config.New("default", 0, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Now())
			}
			plain := filepath.Join(b.TempDir(), "plain.json")
			var tEtcd, tPlain time.Duration
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st := next(i)
				t0 := time.Now()
				if _, _, err := s.CommitConfig(ctx, st, 0); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				f, err := os.Create(plain)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(raw); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				_ = f.Close()
				tEtcd += t1.Sub(t0)
				tPlain += time.Since(t1)
			}
			b.StopTimer()
			b.ReportMetric(float64(tEtcd.Microseconds())/1000/float64(b.N), "etcd-ms")
			b.ReportMetric(float64(tPlain.Microseconds())/1000/float64(b.N), "fsync-ms")
			b.ReportMetric(float64(tEtcd)/float64(tPlain), "ratio")
		})
	}
}
