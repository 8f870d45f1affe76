package config_test

import (
	"bytes"
	"crypto/sha256"
	stdjson "encoding/json"
	"fmt"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

// scanInputs are the documents the strict check is measured on: every KIC
// golden configuration as the compact JSON KIC pushes, and the bench's
// generated 1 and 20 MiB configurations.
func scanInputs(b *testing.B) []struct {
	name string
	docs [][]byte
} {
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
	return []struct {
		name string
		docs [][]byte
	}{
		{"kic-golden", golden},
		{"gen-1MiB", [][]byte{benchJSON(1 << 20)}},
		{"gen-20MiB", [][]byte{benchJSON(20 << 20)}},
	}
}

// sink keeps the baselines' results alive, so the compiler cannot drop
// their loops.
var sink int

// BenchmarkScan is the strict well-formedness check (Scan, and the
// streaming Scanner in the 1 MiB pieces of an upload) beside honest
// baselines over the same bytes in the same run: the least a pass can do
// (read every byte once: a plain loop, and utf8.Valid, which skips ASCII
// eight bytes at a time) and SHA-256, which runs beside the check on the
// ack path; and the libraries it stands for: encoding/json.Valid (no
// duplicate-key check) and go-json-experiment's jsontext (refuses
// duplicate names and invalid UTF-8). MB/s is per input byte and wall time; cpu-MB/s per CPU time
// of the process (the fairer figure on a shared machine: run with -cpu 1).
func BenchmarkScan(b *testing.B) {
	for _, in := range scanInputs(b) {
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
			{"Scan", config.Valid},
			{"encoding-json.Valid", stdjson.Valid},
			{"jsontext", func(d []byte) bool {
				dec := jsontext.NewDecoder(bytes.NewReader(d))
				return dec.SkipValue() == nil
			}},
			{"Scanner-1MiB-pieces", scanPieces},
			{"Check", func(d []byte) bool { _, err := config.Check(d, config.FormatJSON); return err == nil }},
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
