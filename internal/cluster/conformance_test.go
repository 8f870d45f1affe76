package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jonboulle/clockwork"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
	"github.com/confighub/confighub/test/etcdtest"
)

// replicasEnv is two replicas over one etcd as an enginetest.Env: sinks
// and pushes go through one replica's hub, the status is read through the
// other's view, and each sink runs on its rendezvous owner.
type replicasEnv struct {
	rs     []*replica
	fleets []*enginetest.Fleet
}

func (e *replicasEnv) Set(name string, b enginetest.Behavior) {
	for _, f := range e.fleets {
		f.Preset(name, b)
		if s := f.Sink(name); s != nil {
			s.Set(b)
		}
	}
}

func (e *replicasEnv) PutSink(t *testing.T, name string, o *confighubv1.SinkOptions) {
	t.Helper()
	if _, _, err := e.rs[1].hub.PutSink(context.Background(), &confighubv1.Sink{Name: name, Kind: enginetest.Kind, Options: o}); err != nil {
		t.Fatal(err)
	}
}

func (e *replicasEnv) DeleteSink(t *testing.T, name string) {
	t.Helper()
	if err := e.rs[1].hub.DeleteSink(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

func (e *replicasEnv) Push(t *testing.T, content string) uint64 {
	t.Helper()
	res, err := e.rs[1].hub.Push(context.Background(), hub.PushInput{Config: fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":%q,"host":"h"}]}`, content)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Generation
}

func (e *replicasEnv) View() status.View { return e.rs[0].rep.View() }

func (e *replicasEnv) Converged(gen uint64) int {
	n := 0
	for _, r := range e.rs {
		n += r.m.Count(gen)
	}
	return n
}

// TestEngineConformance runs the engine conformance suite (the one
// internal/engine runs on one engine) on two replicas over one etcd: the
// engines with the placement as their ownership predicate, statuses
// through etcd, the etcd store shared.
func TestEngineConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Env {
		e := etcdtest.Start(t)
		cli := e.Client(t)
		env := &replicasEnv{}
		for _, id := range []string{"r1", "r2"} {
			f := enginetest.NewFleet(clockwork.NewRealClock())
			reg := sink.NewRegistry()
			if err := f.Register(reg, enginetest.Kind, sink.Capabilities{}, false); err != nil {
				t.Fatal(err)
			}
			env.fleets = append(env.fleets, f)
			env.rs = append(env.rs, startReplicaReg(t, id, etcdShared(t, cli), cli, reg, slog.New(slog.DiscardHandler)))
		}
		waitReplicas(t, env.rs...)
		return env
	})
}
