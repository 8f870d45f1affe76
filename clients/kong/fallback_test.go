package kong

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/kongemu"
)

// fiveRoutes is one service with routes r1 ... r5.
const fiveRoutes = `{"_format_version":"3.0","services":[{"name":"s","host":"h","routes":[
{"name":"r1","paths":["/1"]},{"name":"r2","paths":["/2"]},{"name":"r3","paths":["/3"]},
{"name":"r4","paths":["/4"]},{"name":"r5","paths":["/5"]}]}]}`

// rejectRoute is Kong's flattened 400 naming one route.
func rejectRoute(name string) kongemu.Step {
	return kongemu.Step{Status: http.StatusBadRequest, Body: fmt.Sprintf(`{"code":14,"name":"invalid declarative configuration","message":"declarative config is invalid: {}","fields":{},
"flattened_errors":[{"entity_type":"route","entity_name":%q,"entity_tags":["k8s-name:%s"],"errors":[{"type":"field","field":"paths","message":"bad path"}]}]}`, name, name)}
}

// TestFallbackRounds: a fallback the gateway rejects naming another
// route is rebuilt without it; the third fallback rejected too ends in the
// rejection (4 posts in all); a fallback taken is a *sink.Degraded naming
// each excluded route with the gateway's message (and its tags, the
// configuration's entity having none).
func TestFallbackRounds(t *testing.T) {
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u, OnReject: confighubv1.OnReject_ON_REJECT_FALLBACK}, sink.Deps{})
	g.ScriptConfig(rejectRoute("r1"), rejectRoute("r2"), rejectRoute("r3"), rejectRoute("r4"))
	err := s.Apply(context.Background(), cfgOf(t, []byte(fiveRoutes)))
	se, ok := sink.AsError(err)
	if !ok || se.Code != sink.CodeRejected || !se.Permanent || !strings.Contains(se.Message, "rejected its fallback too") {
		t.Fatalf("after %d rounds: %v, want the rejection", MaxFallbackRounds, err)
	}
	if n := g.Pushes(); n != 1+MaxFallbackRounds {
		t.Fatalf("%d posts, want the whole and %d fallbacks", n, MaxFallbackRounds)
	}

	g.ClearFaults()
	g.ScriptConfig(rejectRoute("r1"), rejectRoute("r2"))
	err = s.Apply(context.Background(), cfgOf(t, []byte(fiveRoutes)))
	var d *sink.Degraded
	if !errors.As(err, &d) {
		t.Fatalf("Apply = %v, want a *sink.Degraded", err)
	}
	var got []string
	for _, x := range d.Excluded {
		got = append(got, x.GetEntityName()+"="+x.GetMessage()+"/"+strings.Join(x.GetEntityTags(), ","))
	}
	if strings.Join(got, " ") != "r1=paths: bad path/k8s-name:r1 r2=paths: bad path/k8s-name:r2" {
		t.Fatalf("excluded %v", got)
	}
	if c := g.Counts(); c["routes"] != 3 || c["services"] != 1 {
		t.Fatalf("the gateway holds %v, want the service and r3-r5", c)
	}
	if d.Rejection == nil || len(d.Rejection.EntityErrors) != 1 || d.Hash == "" {
		t.Fatalf("degraded %+v", d)
	}
}

// TestFallbackOffByDefault: without on_reject the rejection is returned
// as it was, and nothing else is posted.
func TestFallbackOffByDefault(t *testing.T) {
	g, u := startGW(t)
	s := newSink(t, &confighubv1.KongSpec{Address: u}, sink.Deps{})
	g.ScriptConfig(rejectRoute("r1"))
	err := s.Apply(context.Background(), cfgOf(t, []byte(fiveRoutes)))
	if se, ok := sink.AsError(err); !ok || se.Code != sink.CodeRejected || g.Pushes() != 1 {
		t.Fatalf("Apply = %v after %d posts", err, g.Pushes())
	}
}
