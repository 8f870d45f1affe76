package kongraph

import (
	"fmt"
	"strings"
	"testing"
)

// largeConfig is n services, each with one route carrying one plugin, and
// n consumers with a key-auth credential each (6n entities).
func largeConfig(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"s%d","host":"h%d","tags":["k8s-name:s%d"],"routes":[{"name":"r%d","paths":["/%d"],"plugins":[{"name":"cors","id":"00000000-0000-0000-0000-%012d"}]}]}`, i, i, i, i, i, i)
	}
	b.WriteString(`],"consumers":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"username":"u%d","keyauth_credentials":[{"key":"k%d"}],"acls":[{"group":"g%d"}]}`, i, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkFallback: parse a configuration of 6n entities (and the
// previous one) and build the fallback without one route, keeping its
// previous version.
func BenchmarkFallback(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("entities=%d", 6*n), func(b *testing.B) { benchFallback(b, n) })
	}
}

func benchFallback(b *testing.B, n int) {
	raw := largeConfig(n)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		prev, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		i, ok := d.Find("route", "", fmt.Sprintf("r%d", n/2))
		if !ok {
			b.Fatal("no route")
		}
		if _, ex, err := d.Fallback([]int{i}, prev); err != nil || len(ex) != 1 || !ex[0].PreviousKept {
			b.Fatalf("fallback: %v %v", ex, err)
		}
	}
}
