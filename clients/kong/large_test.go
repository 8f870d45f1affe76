package kong

import (
	"context"
	"fmt"
	"strings"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/kongemu"
)

// A 2 MiB body against a 1 MiB limit: the gateway answers 413 before
// reading the body, and the sink still sees the 413 (not a broken pipe).
func TestApply413LargeBody(t *testing.T) {
	_, u := startGW(t, kongemu.WithBodyLimit(1<<20))
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; i < 40000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"svc-%d","host":"h%d.example.com","port":80}`, i, i)
	}
	b.WriteString("]}")
	for i := 0; i < 3; i++ {
		err := s.Apply(context.Background(), cfgOf(t, []byte(b.String())))
		se := sinkErr(t, err)
		if se.Code != "too-large" {
			t.Fatalf("%+v", se)
		}
	}
}
