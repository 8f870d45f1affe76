package configdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// bigConfig is services with one route each, n of them, about 20 MiB for
// n = 60,000; route r<changed> gets another path.
func bigConfig(n, changed int) []byte {
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		path := fmt.Sprintf("/p%d", i)
		if i == changed {
			path += "-changed"
		}
		fmt.Fprintf(&b, `{"name":"s%d","id":"00000000-0000-4000-8000-%012d","host":"svc-%d.default.80.svc","port":80,"protocol":"http","connect_timeout":60000,"read_timeout":60000,"write_timeout":60000,"retries":5,"tags":["k8s-name:svc-%d","k8s-namespace:default","k8s-kind:Service","k8s-version:v1"],"routes":[{"name":"r%d","paths":[%q],"hosts":["example.com"],"protocols":["http","https"],"strip_path":false,"preserve_host":true,"https_redirect_status_code":426,"tags":["k8s-name:ing-%d","k8s-namespace:default","k8s-kind:Ingress"]}]}`, i, i, i, i, i, path, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkDiff20MiB diffs two 20 MiB configurations that differ in one
// route against the least any diff does: decoding both with encoding/json
// (with UseNumber, as the diff decodes), both held at once. Each iteration runs both, in
// alternating order, and reports each one's time and their ratio.
func BenchmarkDiff20MiB(b *testing.B) {
	const n = 60000
	from, to := bigConfig(n, -1), bigConfig(n, n/2)
	b.SetBytes(int64(len(from) + len(to)))
	b.ReportAllocs()
	var diffTime, decodeTime time.Duration
	i := 0
	for b.Loop() {
		runs := []func(){
			func() {
				start := time.Now()
				d, err := Configs(from, to)
				diffTime += time.Since(start)
				if err != nil || len(d.Changes) != 1 {
					b.Fatalf("%v %v", d, err)
				}
			},
			func() {
				start := time.Now()
				// Both decoded values are held together, as any diff of
				// the two holds them.
				var vs [2]any
				for i, raw := range [][]byte{from, to} {
					dec := json.NewDecoder(bytes.NewReader(raw))
					dec.UseNumber()
					if err := dec.Decode(&vs[i]); err != nil {
						b.Fatal(err)
					}
				}
				decodeTime += time.Since(start)
				runtime.KeepAlive(vs)
			},
		}
		if i%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, r := range runs {
			r()
		}
		i++
	}
	b.ReportMetric(float64(diffTime.Nanoseconds())/float64(i), "diff-ns/op")
	b.ReportMetric(float64(decodeTime.Nanoseconds())/float64(i), "decode-ns/op")
	b.ReportMetric(float64(diffTime)/float64(decodeTime), "diff/decode")
}

// BenchmarkCount20MiB: counting a 20 MiB configuration's entities, as the
// hub does on every push.
func BenchmarkCount20MiB(b *testing.B) {
	raw := bigConfig(60000, -1)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if c := Count(raw); c["route"] != 60000 {
			b.Fatal(c)
		}
	}
}
