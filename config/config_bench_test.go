package config_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

// benchJSON is the bench's KIC-shaped JSON configuration of about n
// bytes (harness.KongJSON, what confighub-bench pushes).
func benchJSON(n int) []byte { return harness.KongJSON(n) }

var benchSizes = []int{1 << 20, 20 << 20}

// BenchmarkCheckJSON is the validation on the push ack path: gjson
// well-formedness and the _format_version lookup, no decode.
func BenchmarkCheckJSON(b *testing.B) {
	for _, n := range benchSizes {
		raw := benchJSON(n)
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := config.Check(raw, config.FormatJSON); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckYAML is the YAML path: parse and convert to JSON once
// (measured apart from the JSON ack path; docs/performance.md).
func BenchmarkCheckYAML(b *testing.B) {
	js := benchJSON(1 << 20)
	raw, err := yaml.JSONToYAML(js)
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
func BenchmarkHash(b *testing.B) {
	for _, n := range benchSizes {
		raw := benchJSON(n)
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				_ = config.Hash(raw)
			}
		})
	}
}

// BenchmarkCheckAndHash runs both side by side as the hub does; on two
// cores it costs the slower of the two, not their sum.
func BenchmarkCheckAndHash(b *testing.B) {
	for _, n := range benchSizes {
		raw := benchJSON(n)
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				wg.Go(func() { _ = config.Hash(raw) })
				if _, err := config.Check(raw, config.FormatJSON); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
			}
		})
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

// BenchmarkValid is the JSON well-formedness pass alone, against
// encoding/json.Valid's contract (config.Valid) and gjson.ValidBytes.
func BenchmarkValid(b *testing.B) {
	raw := benchJSON(20 << 20)
	for _, v := range []struct {
		name string
		fn   func([]byte) bool
	}{{"config.Valid", config.Valid}, {"gjson.ValidBytes", gjson.ValidBytes}, {"config.Scanner (1 MiB pieces)", scanPieces}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if !v.fn(raw) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
