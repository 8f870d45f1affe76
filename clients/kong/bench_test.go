package kong

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/kongemu"
)

func bigConfig(services int, tag string) []byte {
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; i < services; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"svc-%d","host":"h%d.example.com","port":80,"tags":["%s"],"routes":[{"name":"r-%d","paths":["/p%d"]}]}`, i, i, tag, i, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// BenchmarkApply1MiB: one apply of a ~1 MiB JSON config to an emulated
// gateway (two configs alternate so every apply is a 201; the emulator's
// cache keeps its parsing out of the measurement after the first round).
func BenchmarkApply1MiB(b *testing.B) {
	g := kongemu.New(kongemu.WithCache(kongemu.NewCache()))
	u, err := g.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	s, err := New(&confighubv1.Sink{Name: "gw", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: u}}}, sink.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.(*Sink).Close()
	var cfgs []*config.Config
	for i, tag := range []string{"a", "b"} {
		raw := bigConfig(7000, tag)
		cfgs = append(cfgs, config.New("default", uint64(i+1), config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Time{}))
	}
	b.SetBytes(int64(len(cfgs[0].Raw)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Apply(context.Background(), cfgs[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
