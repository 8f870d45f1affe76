package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/configdiff"
	"github.com/confighub/confighub/internal/store"
)

// Generation is one retained generation and what became of it (Status is nil once the status view no longer tracks it).
type Generation struct {
	store.GenerationInfo
	Status   *confighubv1.GenerationStatus
	Rejected int
	Outcome  confighubv1.GenerationOutcome
}

// DefaultGenerationsPage is how many generations Generations returns by default.
const DefaultGenerationsPage = 20

// Generations lists a stream's retained generations, newest first, older
// than before (0: all), at most limit; next is the next page's before (0: none).
func (h *Hub) Generations(ctx context.Context, stream string, before uint64, limit int) (gens []Generation, next uint64, err error) {
	stream = config.StreamName(stream)
	if limit <= 0 {
		limit = DefaultGenerationsPage
	}
	infos, err := h.store.ListGenerations(ctx, stream, before, limit+1)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: stream %q has no configuration", ErrNotFound, stream)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: list the generations of stream %q: %v", ErrUnavailable, stream, err)
	}
	if len(infos) > limit {
		infos = infos[:limit]
		next = infos[limit-1].Generation
	}
	var snap *confighubv1.GetStatusResponse
	if h.view != nil {
		snap, _ = h.view.Snapshot(stream)
	}
	byGen := map[uint64]*confighubv1.GenerationStatus{}
	for _, g := range snap.GetGenerations() {
		byGen[g.GetGeneration()] = g
	}
	rejected := map[uint64]int{}
	for _, s := range snap.GetSinks() {
		if g := s.GetRejectedGeneration(); g > 0 {
			rejected[g]++
		}
	}
	gens = make([]Generation, len(infos))
	for i, in := range infos {
		g := Generation{GenerationInfo: in, Status: byGen[in.Generation], Rejected: rejected[in.Generation]}
		g.Outcome = outcome(g, snap.GetGeneration())
		gens[i] = g
	}
	return gens, next, nil
}

// outcome is what became of g, a generation of a stream now at current.
func outcome(g Generation, current uint64) confighubv1.GenerationOutcome {
	st := g.Status
	switch {
	case st == nil || st.GetSinksTotal() == 0:
		return confighubv1.GenerationOutcome_GENERATION_OUTCOME_UNSPECIFIED
	case st.GetConvergeTime() != nil || st.GetSinksApplied() >= st.GetSinksTotal():
		return confighubv1.GenerationOutcome_GENERATION_OUTCOME_CONVERGED
	case g.Rejected > 0:
		return confighubv1.GenerationOutcome_GENERATION_OUTCOME_REJECTED
	case g.Generation < current:
		return confighubv1.GenerationOutcome_GENERATION_OUTCOME_SUPERSEDED
	}
	return confighubv1.GenerationOutcome_GENERATION_OUTCOME_CONVERGING
}

// Generation returns a stream's generation gen (0: the current one).
func (h *Hub) Generation(ctx context.Context, stream string, gen uint64) (*config.Config, error) {
	cur, err := h.Config(ctx, stream)
	if err != nil || gen == 0 || gen == cur.Generation {
		return cur, err
	}
	c, err := h.store.GetGeneration(ctx, cur.Stream, gen)
	switch {
	case errors.Is(err, store.ErrNotRetained):
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err) // err names the range
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%w: stream %q has no generation %d", ErrNotFound, cur.Stream, gen)
	case err != nil:
		return nil, fmt.Errorf("%w: read generation %d of stream %q: %v", ErrUnavailable, gen, cur.Stream, err)
	}
	return c, nil
}

// Diff is two configurations of a stream compared entity by entity (From nil: before the first).
type Diff struct {
	Stream   string
	From, To *config.Config
	Sink     string
	*configdiff.Diff
}

// DiffGenerations compares two generations of a stream: to 0 is the
// current one, from 0 the one before to (nothing before generation 1).
func (h *Hub) DiffGenerations(ctx context.Context, stream string, from, to uint64) (Diff, error) {
	t, err := h.Generation(ctx, stream, to)
	if err != nil {
		return Diff{}, err
	}
	if from == 0 {
		from = t.Generation - 1
	}
	var f *config.Config
	if from > 0 {
		if f, err = h.Generation(ctx, t.Stream, from); err != nil {
			return Diff{}, err
		}
	}
	return h.diff(Diff{Stream: t.Stream, From: f, To: t})
}

// DiffSink compares what a FAILED or DEGRADED sink last applied (for a
// DEGRADED sink, its fallback) with the generation it was asked to apply.
func (h *Hub) DiffSink(ctx context.Context, name string) (Diff, error) {
	st, stream, ok := h.sinkStatus(name)
	if !ok {
		return Diff{}, fmt.Errorf("%w: sink %q", ErrNotFound, name)
	}
	if s := st.GetState(); s != confighubv1.SinkState_SINK_STATE_FAILED && s != confighubv1.SinkState_SINK_STATE_DEGRADED {
		return Diff{}, fmt.Errorf("%w: sink %q is %s", ErrNotFailing, name, s)
	}
	to, err := h.Generation(ctx, stream, st.GetDesiredGeneration())
	if err != nil {
		return Diff{}, err
	}
	from, ok := h.diag.LastApplied(name)
	if !ok && st.GetAppliedGeneration() > 0 {
		if from, err = h.Generation(ctx, stream, st.GetAppliedGeneration()); err != nil {
			return Diff{}, err
		}
	}
	return h.diff(Diff{Stream: stream, From: from, To: to, Sink: name})
}

// sinkStatus finds a sink's status in its stream's snapshot.
func (h *Hub) sinkStatus(name string) (*confighubv1.SinkStatus, string, bool) {
	spec := h.sinks.Sink(name)
	if h.view == nil || spec == nil {
		return nil, "", false
	}
	snap, _ := h.view.Snapshot(spec.GetStream())
	for _, s := range snap.GetSinks() {
		if s.GetSink() == name {
			return s, spec.GetStream(), true
		}
	}
	return nil, "", false
}

func (h *Hub) diff(d Diff) (Diff, error) {
	js := func(c *config.Config) ([]byte, error) {
		if c == nil {
			return []byte(`{}`), nil
		}
		b, err := c.JSON()
		if err != nil {
			return nil, fmt.Errorf("%w: generation %d of stream %q: %v", ErrInvalid, c.Generation, d.Stream, err)
		}
		return b, nil
	}
	from, err := js(d.From)
	if err != nil {
		return Diff{}, err
	}
	to, err := js(d.To)
	if err != nil {
		return Diff{}, err
	}
	if d.Diff, err = configdiff.Configs(from, to); err != nil {
		return Diff{}, fmt.Errorf("%w: stream %q: %v", ErrInvalid, d.Stream, err)
	}
	return d, nil
}

// RollbackLabel is the label a rollback adds: the generation it rolls back to.
const RollbackLabel = "confighub.rollback-of"

// Rollback pushes generation gen of a stream again through Push, as a new
// generation with gen's bytes, format and labels plus RollbackLabel.
func (h *Hub) Rollback(ctx context.Context, stream string, gen, expected uint64, origin config.Origin) (PushResult, error) {
	c, err := h.Generation(ctx, stream, gen)
	if err != nil {
		return PushResult{}, err
	}
	labels := maps.Clone(c.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RollbackLabel] = strconv.FormatUint(c.Generation, 10)
	origin.RollbackOf = c.Generation
	return h.Push(ctx, PushInput{Stream: c.Stream, Config: c.Raw, Format: c.Format, ExpectedGeneration: expected, Labels: labels, Hash: c.Hash, Origin: origin})
}

// Proto is d as DiffConfig answers it.
func (d Diff) Proto() *confighubv1.DiffConfigResponse {
	out := &confighubv1.DiffConfigResponse{Stream: d.Stream, To: d.To.Generation, ToHash: d.To.Hash, Sink: d.Sink}
	if d.From != nil {
		out.From, out.FromHash = d.From.Generation, d.From.Hash
	}
	created, updated, deleted := d.Counts()
	out.Created, out.Updated, out.Deleted = uint32(created), uint32(updated), uint32(deleted)
	for _, c := range d.Changes {
		out.Changes = append(out.Changes, changeOut(c))
	}
	return out
}

var actions = map[configdiff.Action]confighubv1.EntityAction{
	configdiff.Create: confighubv1.EntityAction_ENTITY_ACTION_CREATE,
	configdiff.Update: confighubv1.EntityAction_ENTITY_ACTION_UPDATE,
	configdiff.Delete: confighubv1.EntityAction_ENTITY_ACTION_DELETE,
}

func changeOut(c configdiff.Change) *confighubv1.EntityChange {
	out := &confighubv1.EntityChange{Action: actions[c.Action], Type: c.Entity.Type, Name: c.Entity.Name, Id: c.Entity.ID,
		Parent: c.Entity.Parent, Tags: c.Entity.Tags, ObjectJson: string(c.Object)}
	for _, f := range c.Fields {
		out.Fields = append(out.Fields, &confighubv1.FieldChange{Path: f.Path, OldJson: string(f.Old), NewJson: string(f.New)})
	}
	return out
}
