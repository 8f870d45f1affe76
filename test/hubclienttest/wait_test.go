package hubclienttest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
)

// pickySink applies every configuration but one that says "bad", which it
// rejects as Kong would, naming the route and its KIC tags.
type pickySink struct{}

func (pickySink) Apply(_ context.Context, cfg *config.Config) error {
	if !bytes.Contains(cfg.Raw, []byte("bad")) {
		return nil
	}
	return &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: "declarative config is invalid", EntityErrors: []*confighubv1.EntityError{{
		EntityType: "route", EntityName: "default.echo.0",
		EntityTags: []string{"k8s-name:echo", "k8s-namespace:default", "k8s-kind:Ingress"},
		Errors:     []*confighubv1.FieldError{{Type: "field", Field: "paths.0", Message: "should start with: / (fixed path) or ~/ (regex path)"}},
	}}}
}

func (pickySink) Describe() sink.Capabilities { return sink.Capabilities{} }

// startSinkHub serves an in-process hub with the named sinks of kind
// "picky" on stream default.
func startSinkHub(t *testing.T, names ...string) *hubclient.Client {
	t.Helper()
	reg := sink.NewRegistry()
	if err := reg.Register("picky", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) { return pickySink{}, nil }); err != nil {
		t.Fatal(err)
	}
	var seed []*confighubv1.Sink
	for _, n := range names {
		seed = append(seed, &confighubv1.Sink{Name: n, Kind: "picky"})
	}
	eng := engine.New(reg)
	h := hub.New(memory.New(), hub.PortsOf(eng))
	if err := h.Start(context.Background(), seed); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(h)
	if err != nil {
		t.Fatal(err)
	}
	return hubclient.New(harness.Dial(t, harness.ServeGRPC(t, srv.GRPC, eng.Stop)))
}

// TestWaitOnARealHub: Wait returns every sink applied, then the sinks'
// rejection with the entity and its tags, through the real engine, status
// broker and server.
func TestWaitOnARealHub(t *testing.T) {
	c := startSinkHub(t, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Push(ctx, hubclient.Push{Config: []byte(`{"_format_version":"3.0","_comment":"good"}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Wait(ctx, "default", res.GetGeneration())
	if err != nil || len(got.Sinks) != 2 || got.Sinks[0].GetAppliedGeneration() != 1 || got.Sinks[1].GetState() != confighubv1.SinkState_SINK_STATE_APPLIED {
		t.Fatalf("Wait: %v %v, want both sinks APPLIED generation 1", got, err)
	}
	res, err = c.Push(ctx, hubclient.Push{Config: []byte(`{"_format_version":"3.0","_comment":"bad"}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Wait(ctx, "default", res.GetGeneration())
	var rej *hubclient.RejectedError
	if !errors.As(err, &rej) || len(rej.Rejected) == 0 {
		t.Fatalf("Wait: %v, want a *RejectedError", err)
	}
	ee := rej.EntityErrors()[0]
	if name, _ := hubclient.Tag(ee.GetEntityTags(), "k8s-name"); name != "echo" || ee.GetErrors()[0].GetField() != "paths.0" || rej.Rejected[0].GetRejectedGeneration() != 2 {
		t.Fatalf("rejection %v", rej)
	}
	if _, err := c.Wait(ctx, "typo", 1); err == nil {
		t.Fatal("Wait on an unknown stream succeeded")
	}
}

// TestWatchNeverCountsAheadOfSinks: over the real hub, a generation's
// sinks_applied never exceeds the sinks whose APPLIED event came before it,
// not even by one revision before the last sink's APPLIED.
func TestWatchNeverCountsAheadOfSinks(t *testing.T) {
	c := startSinkHub(t, "a", "b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const pushes = 5
	applied := map[string]uint64{}
	errDone := errors.New("done")
	watching := make(chan struct{})
	pushed := make(chan error, 1)
	go func() {
		<-watching
		for i := range pushes {
			if _, err := c.Push(ctx, hubclient.Push{Config: []byte(`{"_format_version":"3.0","_comment":"` + string(rune('a'+i)) + `"}`)}); err != nil {
				pushed <- err
				return
			}
		}
		pushed <- nil
	}()
	err := c.Watch(ctx, "default", 0, func(ev *confighubv1.WatchStatusResponse) error {
		switch {
		case ev.GetSnapshot() != nil:
			for _, st := range ev.GetSnapshot().GetSinks() {
				applied[st.GetSink()] = st.GetAppliedGeneration()
			}
			close(watching)
		case ev.GetSink() != nil:
			applied[ev.GetSink().GetSink()] = ev.GetSink().GetAppliedGeneration()
		case ev.GetGeneration() != nil:
			g := ev.GetGeneration()
			var n uint32
			for _, a := range applied {
				if a >= g.GetGeneration() {
					n++
				}
			}
			if g.GetSinksApplied() > n {
				t.Errorf("revision %d: generation %d sinks_applied %d, but %d sinks' events say applied", ev.GetRevision(), g.GetGeneration(), g.GetSinksApplied(), n)
			}
			if g.GetGeneration() == pushes && g.GetSinksApplied() == 3 {
				return errDone
			}
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("Watch: %v", err)
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
}
