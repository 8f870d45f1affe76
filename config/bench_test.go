package config_test

import (
	"crypto/sha256"
	stdjson "encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

// benchJSON is the bench's KIC-shaped JSON configuration of about n
// bytes (harness.KongJSON, what confighub-bench pushes).
func benchJSON(n int) []byte { return harness.KongJSON(n) }

// sink keeps the baselines' results alive, so the compiler cannot drop
// their loops.
var sink int

// BenchmarkScan is the strict check (Check, and the streaming Scanner in
// an upload's 1 MiB pieces) beside baselines over the same bytes: a pass
// that reads every byte once, utf8.Valid, SHA-256 (which runs beside the
// check on the ack path) and encoding/json.Valid (no duplicate-key check),
// on every KIC golden configuration as compact JSON and the bench's
// generated 1 and 20 MiB ones. MB/s is per input byte and wall time;
// cpu-MB/s per CPU time of the process (the fairer figure on a shared
// machine: run with -cpu 1).
func BenchmarkScan(b *testing.B) {
	var golden [][]byte
	for _, f := range harness.Fixtures(b) {
		y, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(y)
		if err != nil {
			b.Fatal(err)
		}
		golden = append(golden, js)
	}
	for _, in := range []struct {
		name string
		docs [][]byte
	}{{"kic-golden", golden}, {"gen-1MiB", [][]byte{benchJSON(1 << 20)}}, {"gen-20MiB", [][]byte{benchJSON(20 << 20)}}} {
		var size int64
		for _, d := range in.docs {
			size += int64(len(d))
		}
		for _, p := range []struct {
			name string
			fn   func([]byte) bool
		}{
			{"baseline-byteloop", func(d []byte) bool {
				var x byte
				for _, c := range d {
					x ^= c
				}
				sink += int(x)
				return true
			}},
			{"baseline-utf8.Valid", utf8.Valid},
			{"sha256", func(d []byte) bool { sum := sha256.Sum256(d); sink += int(sum[0]); return true }},
			{"encoding-json.Valid", stdjson.Valid},
			{"Check", func(d []byte) bool { _, err := config.Check(d, config.FormatJSON); return err == nil }},
			{"Scanner-1MiB-pieces", scanPieces},
		} {
			b.Run(fmt.Sprintf("in=%s/pass=%s", in.name, p.name), func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				start, ok := cpuTime()
				for b.Loop() {
					for _, d := range in.docs {
						if !p.fn(d) {
							b.Fatal("rejected")
						}
					}
				}
				if end, _ := cpuTime(); ok && end > start {
					b.ReportMetric(float64(size)*float64(b.N)/1e6/(end-start).Seconds(), "cpu-MB/s")
				}
			})
		}
	}
}

// scanPieces runs the streaming Scanner over raw in 1 MiB pieces, as an
// upload's chunks arrive.
func scanPieces(raw []byte) bool {
	s := config.NewScanner()
	for off := 0; off < len(raw); off += 1 << 20 {
		if _, err := s.Write(raw[off:min(off+1<<20, len(raw))]); err != nil {
			return false
		}
	}
	_, err := s.Close()
	return err == nil
}

// sized runs op on the bench's 1 and 20 MiB configurations.
func sized(b *testing.B, op func(b *testing.B, raw []byte)) {
	for _, n := range []int{1 << 20, 20 << 20} {
		raw := benchJSON(n)
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				op(b, raw)
			}
		})
	}
}

func checkJSON(b *testing.B, raw []byte) {
	if _, err := config.Check(raw, config.FormatJSON); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCheckJSON is the validation on the push ack path.
func BenchmarkCheckJSON(b *testing.B) { sized(b, checkJSON) }

// BenchmarkCheckYAML is the YAML path: parse and convert to JSON once
// (measured apart from the JSON ack path; docs/performance.md).
func BenchmarkCheckYAML(b *testing.B) {
	raw, err := yaml.JSONToYAML(benchJSON(1 << 20))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Check(raw, config.FormatYAML); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHash is the SHA-256 of the ack path.
func BenchmarkHash(b *testing.B) { sized(b, func(_ *testing.B, raw []byte) { _ = config.Hash(raw) }) }

// BenchmarkCheckAndHash runs both side by side as the hub does; on two
// cores it costs the slower of the two, not their sum.
func BenchmarkCheckAndHash(b *testing.B) {
	sized(b, func(b *testing.B, raw []byte) {
		var wg sync.WaitGroup
		wg.Go(func() { _ = config.Hash(raw) })
		checkJSON(b, raw)
		wg.Wait()
	})
}
