package hub

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/configdiff"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/memory"
)

func svc(port string) []byte {
	return []byte(`{"_format_version":"3.0","services":[{"name":"echo","host":"echo.local","port":` + port + `,"routes":[{"name":"r","paths":["/"]}]}]}`)
}

func TestRollback(t *testing.T) { eachStore(t, testRollback, nil) }

// testRollback: a rollback is a new generation with the old one's bytes,
// labels and a label naming it, its origin saying what it rolls back to;
// a stale expected generation is ErrStale; rolling back to the current
// hash is an unchanged push.
func testRollback(t *testing.T, st store.Store) {
	ctx := context.Background()
	fan := newFake()
	h := New(st, fan.ports())
	who := config.Origin{Pusher: "kic", Peer: "127.0.0.1:4000"}
	for _, port := range []string{"80", "81"} {
		if _, err := h.Push(ctx, PushInput{Config: svc(port), Labels: map[string]string{"commit": port}, Origin: who}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Rollback(ctx, "", 1, 1, who); !errors.Is(err, ErrStale) {
		t.Fatalf("rollback expecting generation 1 at 2: %v, want ErrStale", err)
	}
	ops := config.Origin{Pusher: "ops", Peer: "127.0.0.1:5000"}
	res, err := h.Rollback(ctx, "", 1, 2, ops)
	if err != nil || res.Generation != 3 || res.Unchanged || res.Hash != config.Hash(svc("80")) {
		t.Fatalf("rollback to 1: %+v %v", res, err)
	}
	c, err := h.Generation(ctx, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Raw) != string(svc("80")) || c.Labels["commit"] != "80" || c.Labels[RollbackLabel] != "1" {
		t.Fatalf("generation 3: %s labels %v", c.Raw, c.Labels)
	}
	gens, next, err := h.Generations(ctx, "", 0, 0)
	if err != nil || len(gens) != 3 || next != 0 {
		t.Fatalf("generations: %+v next %d %v", gens, next, err)
	}
	if o := gens[0].Origin; o.Pusher != "ops" || o.Peer != "127.0.0.1:5000" || o.RollbackOf != 1 || o.Entities["service"] != 1 || o.Entities["route"] != 1 {
		t.Fatalf("origin of the rollback: %+v", o)
	}
	if o := gens[2].Origin; o.Pusher != "kic" || o.RollbackOf != 0 {
		t.Fatalf("origin of the first push: %+v", o)
	}
	res, err = h.Rollback(ctx, "", 1, 0, ops)
	if err != nil || !res.Unchanged || res.Generation != 3 {
		t.Fatalf("rollback to the current hash: %+v %v, want unchanged at 3", res, err)
	}
	if len(fan.published) != 3 {
		t.Fatalf("%d generations published, want 3 (the unchanged rollback touches no sink)", len(fan.published))
	}
}

// TestGenerationsPagesAndRetention: pages go newest first and end; a
// generation the store no longer keeps is ErrNotFound naming the range, in
// GetConfig and the diff alike.
func TestGenerationsPagesAndRetention(t *testing.T) {
	ctx := context.Background()
	h := New(memory.New(memory.WithRetention(store.Retention{History: 3})), newFake().ports())
	for _, port := range []string{"80", "81", "82", "83", "84"} {
		if _, err := h.Push(ctx, PushInput{Config: svc(port)}); err != nil {
			t.Fatal(err)
		}
	}
	gens, next, err := h.Generations(ctx, "", 0, 2)
	if err != nil || len(gens) != 2 || gens[0].Generation != 5 || gens[1].Generation != 4 || next != 4 {
		t.Fatalf("first page: %+v next %d %v", gens, next, err)
	}
	gens, next, err = h.Generations(ctx, "", next, 2)
	if err != nil || len(gens) != 1 || gens[0].Generation != 3 || next != 0 {
		t.Fatalf("second page: %+v next %d %v", gens, next, err)
	}
	for _, f := range []func() error{
		func() error { _, err := h.Generation(ctx, "", 2); return err },
		func() error { _, err := h.DiffGenerations(ctx, "", 2, 5); return err },
		func() error { _, err := h.Rollback(ctx, "", 1, 0, config.Origin{}); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "3-5") {
			t.Errorf("an old generation: %v, want ErrNotFound naming 3-5", err)
		}
	}
	if _, _, err := h.Generations(ctx, "nope", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("generations of an unknown stream: %v", err)
	}
}

// TestDiffGenerations: the default compares the current generation with
// the one before; generation 1 compares with nothing.
func TestDiffGenerations(t *testing.T) {
	ctx := context.Background()
	h := New(memory.New(), newFake().ports())
	for _, port := range []string{"80", "81"} {
		if _, err := h.Push(ctx, PushInput{Config: svc(port)}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := h.DiffGenerations(ctx, "", 0, 0)
	if err != nil || d.From.Generation != 1 || d.To.Generation != 2 || len(d.Changes) != 1 {
		t.Fatalf("default diff: %+v %v", d, err)
	}
	if c := d.Changes[0]; c.Action != configdiff.Update || c.Entity.Name != "echo" || len(c.Fields) != 1 || string(c.Fields[0].New) != "81" {
		t.Fatalf("change %+v", c)
	}
	d, err = h.DiffGenerations(ctx, "", 0, 1)
	if err != nil || d.From != nil || len(d.Changes) != 2 {
		t.Fatalf("generation 1: %+v %v", d, err)
	}
	if p := d.Proto(); p.GetFrom() != 0 || p.GetTo() != 1 || p.GetCreated() != 2 {
		t.Fatalf("as the API answers it: %v", p)
	}
}
