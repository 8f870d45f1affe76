package bolt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store/bolt"
)

// benchConfig returns a JSON config of about n bytes.
func benchConfig(n int) []byte {
	entry := []byte(`{"name":"svc-000000","url":"http://upstream.example.svc:8080/path","tags":["k8s-name:x","k8s-namespace:y"]},`)
	var b bytes.Buffer
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for b.Len() < n-64 {
		b.Write(entry)
	}
	b.WriteString(`{"name":"last"}]}`)
	return b.Bytes()
}

// stamp makes raw distinct for iteration i (a new hash each commit).
func stamp(raw []byte, i int) {
	copy(raw[len(raw)-9:], fmt.Sprintf("%03d", i%1000))
}

func writeFsync(path string, raw []byte, flag int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(raw); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// BenchmarkCommit compares one CommitConfig (durable bbolt transaction) with
// a plain write+fsync of the same bytes, interleaved in one loop so all see
// the same disk. Reported: bolt-ms; fsync-ms (os.WriteFile-like: truncate,
// write, fsync) and ratio = bolt/fsync (the baseline of docs/performance.md, scenario 1); inplace-ms
// (overwrite an existing file of that size, fsync: the cheapest possible
// durable write, no block allocation) and ratio-inplace.
//
//	go test -run '^$' -bench BenchmarkCommit -benchtime 20x ./internal/store/bolt
func BenchmarkCommit(b *testing.B) {
	variants := []struct {
		name string
		opts []bolt.Option
	}{
		{"default", nil},
		// The bytes inline in the index transaction instead of a record
		// file: the route a large config does not take.
		{"inline", []bolt.Option{bolt.WithInlineBelow(1 << 30)}},
	}
	for _, size := range []int{1 << 20, 20 << 20} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%dMiB/%s", size>>20, v.name), func(b *testing.B) {
				dir := b.TempDir()
				s, err := bolt.Open(filepath.Join(dir, "confighub.db"), v.opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				raw := benchConfig(size)
				ctx := context.Background()
				next := func(i int) *config.Config {
					stamp(raw, i)
					return config.New("default", 0, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Now())
				}
				commit := func(st *config.Config) {
					if _, _, err := s.CommitConfig(ctx, st, 0); err != nil {
						b.Fatal(err)
					}
				}
				// Warm up: let the file reach its steady size (freed pages reused).
				for i := range 4 {
					commit(next(i))
				}
				plain := filepath.Join(dir, "plain.json")
				inplace := filepath.Join(dir, "inplace.json")
				var tBolt, tPlain, tInplace time.Duration
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					st := next(i + 4) // hashing is not part of the store's cost
					t0 := time.Now()
					commit(st)
					t1 := time.Now()
					if err := writeFsync(plain, raw, os.O_TRUNC); err != nil {
						b.Fatal(err)
					}
					t2 := time.Now()
					if err := writeFsync(inplace, raw, 0); err != nil {
						b.Fatal(err)
					}
					tBolt += t1.Sub(t0)
					tPlain += t2.Sub(t1)
					tInplace += time.Since(t2)
				}
				b.StopTimer()
				b.ReportMetric(float64(tBolt.Microseconds())/1000/float64(b.N), "bolt-ms")
				b.ReportMetric(float64(tPlain.Microseconds())/1000/float64(b.N), "fsync-ms")
				b.ReportMetric(float64(tInplace.Microseconds())/1000/float64(b.N), "inplace-ms")
				b.ReportMetric(float64(tBolt)/float64(tPlain), "ratio")
				b.ReportMetric(float64(tBolt)/float64(tInplace), "ratio-inplace")
			})
		}
	}
}

// BenchmarkConcurrentCommits: 32 goroutines commit 5 KiB configs (hash
// computed beforehand), to one stream or spread over 16, through each
// durability route: the default (inline in a group-committed index
// transaction), each commit its own transaction (nogroup), and the bytes
// in a record file of their own (file: flushed, then the index). The
// routes run one after the other in each iteration, so all see the same
// disk; commits/s is what each acks.
//
//	go test -run '^$' -bench BenchmarkConcurrentCommits -benchtime 5x ./internal/store/bolt
func BenchmarkConcurrentCommits(b *testing.B) {
	routes := []struct {
		name string
		opts []bolt.Option
	}{
		{"default", nil},
		{"nogroup", []bolt.Option{bolt.WithoutGroupCommit()}},
		{"file", []bolt.Option{bolt.WithInlineBelow(0)}},
	}
	const perRound = 320
	for _, streams := range []int{1, 16} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			stores := make([]*bolt.Store, len(routes))
			for i, r := range routes {
				s, err := bolt.Open(filepath.Join(b.TempDir(), "confighub.db"), r.opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				stores[i] = s
			}
			elapsed := make([]time.Duration, len(routes))
			round := 0
			for b.Loop() {
				for ri, s := range stores {
					sts := make([]*config.Config, perRound)
					for i := range sts {
						raw := benchConfig(5 << 10)
						copy(raw[len(raw)-20:], fmt.Sprintf("%09d", round*perRound+i))
						sts[i] = config.New(fmt.Sprint("s", i%streams), 0, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Time{})
					}
					var next atomic.Int64
					var wg sync.WaitGroup
					t0 := time.Now()
					for range 32 {
						wg.Go(func() {
							for i := int(next.Add(1)) - 1; i < perRound; i = int(next.Add(1)) - 1 {
								if _, _, err := s.CommitConfig(context.Background(), sts[i], 0); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					elapsed[ri] += time.Since(t0)
				}
				round++
			}
			for ri, r := range routes {
				b.ReportMetric(float64(round*perRound)/elapsed[ri].Seconds(), r.name+"-commits/s")
			}
		})
	}
}
