package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/test/etcdtest"
)

// failedEnv is one mode of TestFailedConfigOnEveryReplica: in takes the
// pushes and sinks, GetConfig and GetStatus are asked on every hub of out.
type failedEnv struct {
	in  *hub.Hub
	out []*hub.Hub
}

// TestFailedConfigOnEveryReplica: GetConfig with failed answers a sink's
// last failed configuration (its bytes, error and raw body) for whatever
// generation it failed, also once a newer one is current, the same on a
// single hub and on every replica, the ones that do not run the sink
// included; once the sink applies a newer generation there is none.
// GetConfig of what it applied answers that generation while a newer one
// is being applied, the same everywhere too.
func TestFailedConfigOnEveryReplica(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		a := &applies{log: map[string][]string{}, hold: make(chan struct{}), wait: make(chan struct{})}
		st := memory.New()
		eng := engine.New(recKind(t, "single", a), engine.WithRecorder(st))
		t.Cleanup(eng.Stop)
		h := hub.New(st, hub.PortsOf(eng))
		if err := h.Start(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		testFailedConfig(t, failedEnv{in: h, out: []*hub.Hub{h}}, a)
	})
	t.Run("replicas", func(t *testing.T) {
		e := etcdtest.Start(t)
		cli := e.Client(t)
		a := &applies{log: map[string][]string{}, hold: make(chan struct{}), wait: make(chan struct{})}
		r1 := startReplica(t, "r1", etcdShared(t, cli), cli, a)
		r2 := startReplica(t, "r2", etcdShared(t, cli), cli, a)
		waitReplicas(t, r1, r2)
		testFailedConfig(t, failedEnv{in: r2.hub, out: []*hub.Hub{r1.hub, r2.hub}}, a)
	})
}

func testFailedConfig(t *testing.T, env failedEnv, a *applies) {
	bad := []string{"bad0", "bad1", "bad2", "bad3"} // on both replicas
	putSinks(t, env.in, bad...)
	raw := func(what string) []byte {
		return fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":"%s","host":"h"}]}`, what)
	}
	pushRaw := func(b []byte) uint64 {
		res, err := env.in.Push(context.Background(), hub.PushInput{Config: b})
		if err != nil {
			t.Fatal(err)
		}
		return res.Generation
	}
	rejected := raw("reject")
	g1 := pushRaw(rejected)
	failedIs := func(h *hub.Hub, name string, gen uint64) error {
		cfg, serr, err := h.SinkConfig(name, true)
		switch {
		case err != nil:
			return err
		case cfg.Generation != gen || !bytes.Equal(cfg.Raw, rejected):
			return fmt.Errorf("failed config is generation %d %q, want %d %q", cfg.Generation, cfg.Raw, gen, rejected)
		case serr.Error() != "rejected: route r1 is invalid" || string(serr.Body) != `{"message":"invalid"}`:
			return fmt.Errorf("failed with %q body %q", serr.Error(), serr.Body)
		}
		return nil
	}
	check := func(what string, cond func(h *hub.Hub, name string) error) {
		t.Helper()
		for i, h := range env.out {
			for _, name := range bad {
				var last error
				func() {
					defer func() {
						if t.Failed() {
							t.Logf("hub %d, %s: %v", i, name, last)
						}
					}()
					eventually(t, fmt.Sprintf("%s: hub %d, %s", what, i, name), func() bool {
						last = cond(h, name)
						return last == nil
					})
				}()
			}
		}
	}
	check("generation 1 failed", func(h *hub.Hub, name string) error { return failedIs(h, name, g1) })
	check("nothing applied", func(h *hub.Hub, name string) error {
		if _, _, err := h.SinkConfig(name, false); !errors.Is(err, hub.ErrNotFound) {
			return fmt.Errorf("applied config: %v, want none", err)
		}
		return nil
	})

	// Generation 2 is current and being applied: the failed one is still
	// generation 1, on every hub.
	g2 := pushRaw(raw("hold"))
	check("generation 2 in flight", func(h *hub.Hub, name string) error {
		if s := sinkStatus(h, name); s.GetDesiredGeneration() != g2 || s.GetState() != confighubv1.SinkState_SINK_STATE_APPLYING {
			return fmt.Errorf("status %v, want generation %d applying", s, g2)
		}
		return nil
	})
	check("generation 1 still failed", func(h *hub.Hub, name string) error { return failedIs(h, name, g1) })

	// Generation 2 applies: no failed config is left, anywhere.
	close(a.hold)
	check("generation 2 applied, no failed config", func(h *hub.Hub, name string) error {
		if s := sinkStatus(h, name); s.GetAppliedGeneration() != g2 {
			return fmt.Errorf("applied generation %d, want %d", s.GetAppliedGeneration(), g2)
		}
		if _, _, err := h.SinkConfig(name, true); !errors.Is(err, hub.ErrNotFound) {
			return fmt.Errorf("failed config: %v, want none", err)
		}
		return nil
	})

	// Generation 3 is current and being applied: the applied config is
	// still generation 2, on every hub.
	g3 := pushRaw(raw("wait"))
	check("generation 3 in flight", func(h *hub.Hub, name string) error {
		if s := sinkStatus(h, name); s.GetDesiredGeneration() != g3 || s.GetState() != confighubv1.SinkState_SINK_STATE_APPLYING {
			return fmt.Errorf("status %v, want generation %d applying", s, g3)
		}
		return nil
	})
	check("generation 2 is the applied config", func(h *hub.Hub, name string) error {
		cfg, _, err := h.SinkConfig(name, false)
		if err != nil {
			return err
		}
		if cfg.Generation != g2 || !bytes.Equal(cfg.Raw, raw("hold")) {
			return fmt.Errorf("applied config is generation %d %q, want %d", cfg.Generation, cfg.Raw, g2)
		}
		return nil
	})
	close(a.wait)
}

func sinkStatus(h *hub.Hub, name string) *confighubv1.SinkStatus {
	s, _ := h.Status("")
	for _, st := range s.GetSinks() {
		if st.GetSink() == name {
			return st
		}
	}
	return nil
}
