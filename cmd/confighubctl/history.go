package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

func historyCmd(fs *flag.FlagSet) func(*invocation, []string) error {
	stream := fs.String("stream", config.DefaultStream, "stream")
	limit := fs.Uint("limit", 20, "at most this many generations (the hub answers at most 1000)")
	before := fs.Uint64("before", 0, "only generations older than this one (the next page)")
	return func(x *invocation, _ []string) error {
		res, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.ListGenerationsResponse, error) {
			return c.Hub.ListGenerations(ctx, &confighubv1.ListGenerationsRequest{Stream: *stream, Before: *before, Limit: uint32(*limit)})
		})
		if err != nil {
			return err
		}
		return x.print(res, func() string { return renderHistory(res, time.Now()) })
	}
}

// renderHistory is the history table: one generation a line, newest first.
func renderHistory(res *confighubv1.ListGenerationsResponse, now time.Time) string {
	gens := res.GetGenerations()
	text := table("GENERATION\tACCEPTED\tPUSHER\tPEER\tSIZE\tENTITIES\tOUTCOME\tLABELS", len(gens), func(i int) []any {
		gr := gens[i]
		accepted := "-"
		if t := gr.GetAcceptTime(); t != nil {
			accepted = roundDur(now.Sub(t.AsTime())) + " ago"
		}
		labels := labelText(gr.GetLabels(), gr.GetRollbackOf() > 0)
		if gr.GetRollbackOf() > 0 {
			labels = strings.TrimSpace(fmt.Sprintf("rollback to %d %s", gr.GetRollbackOf(), labels))
		}
		return []any{gr.GetGeneration(), accepted, dash(gr.GetPusher()), dash(gr.GetPeer()),
			humanBytes(gr.GetSize()), entityText(gr.GetEntities()), outcomeText(gr), dash(labels)}
	})
	if res.GetNextBefore() > 0 {
		text += fmt.Sprintf("(older: --before %d)\n", res.GetNextBefore())
	}
	return text
}

// outcomeText is "converged 3/3", "converging 1/3", "rejected by 2 of 3".
func outcomeText(gr *confighubv1.GenerationRecord) string {
	switch gr.GetOutcome() {
	case confighubv1.GenerationOutcome_GENERATION_OUTCOME_UNSPECIFIED:
		return "-"
	case confighubv1.GenerationOutcome_GENERATION_OUTCOME_REJECTED:
		return fmt.Sprintf("rejected by %d of %d", gr.GetSinksRejected(), gr.GetSinksTotal())
	}
	name := strings.ToLower(strings.TrimPrefix(gr.GetOutcome().String(), "GENERATION_OUTCOME_"))
	return fmt.Sprintf("%s %d/%d", name, gr.GetSinksApplied(), gr.GetSinksTotal())
}

// entityText is "3 routes, 2 services, 1 plugin".
func entityText(counts map[string]uint32) string {
	types := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(types, func(a, b string) int { return int(counts[b]) - int(counts[a]) })
	var parts []string
	for _, t := range types {
		name := t
		if counts[t] != 1 {
			name += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s", counts[t], name))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// labelText is "k=v,k2=v2", a rollback's rollbackLabel left out.
func labelText(labels map[string]string, rollback bool) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if rollback && k == rollbackLabel {
			continue
		}
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// rollbackLabel is the label the hub puts on a rollback (hub.RollbackLabel).
const rollbackLabel = "confighub.rollback-of"

func diffCmd(fs *flag.FlagSet) func(*invocation, []string) error {
	stream := fs.String("stream", config.DefaultStream, "stream")
	sinkName := fs.String("sink", "", "what this FAILED or DEGRADED sink last applied against what it was asked to apply")
	color := fs.String("color", "auto", "colour the lines: auto (on a terminal), always or never")
	return func(x *invocation, pos []string) error {
		if len(pos) > 2 {
			return usagef("diff: at most two generations (FROM TO), got %d arguments", len(pos))
		}
		var gens [2]uint64
		for i, p := range pos {
			var err error
			if gens[i], err = parseGeneration("diff", p); err != nil {
				return err
			}
		}
		if *sinkName != "" && len(pos) > 0 {
			return usagef("diff: --sink takes no generations")
		}
		ansi, ok := map[string]bool{"always": true, "auto": isTerminal(x.out), "never": false}[*color]
		if !ok {
			return usagef("diff: --color %q: want auto, always or never", *color)
		}
		res, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.DiffConfigResponse, error) {
			return c.Hub.DiffConfig(ctx, &confighubv1.DiffConfigRequest{Stream: *stream, From: gens[0], To: gens[1], Sink: *sinkName})
		})
		if err != nil {
			return err
		}
		return x.print(res, func() string { return renderDiff(res, ansi) })
	}
}

func parseGeneration(cmd, arg string) (uint64, error) {
	gen, err := strconv.ParseUint(arg, 10, 64)
	if err != nil || gen == 0 {
		return 0, usagef("%s: %q is not a generation (a number from 1)", cmd, arg)
	}
	return gen, nil
}

// renderDiff prints a diff as deck diff does, in ANSI colours (SGR codes) when ansi.
func renderDiff(res *confighubv1.DiffConfigResponse, ansi bool) string {
	var b strings.Builder
	what := fmt.Sprintf("stream %s: generation %d (%s) -> %d (%s)", res.GetStream(), res.GetFrom(), short(res.GetFromHash()), res.GetTo(), short(res.GetToHash()))
	if res.GetSink() != "" {
		what = fmt.Sprintf("sink %s (stream %s): applied generation %d (%s) -> asked generation %d (%s)", res.GetSink(), res.GetStream(), res.GetFrom(), short(res.GetFromHash()), res.GetTo(), short(res.GetToHash()))
	}
	b.WriteString(what + "\n")
	for _, ch := range res.GetChanges() {
		verb, colour := "updating", "33"
		switch ch.GetAction() {
		case confighubv1.EntityAction_ENTITY_ACTION_CREATE:
			verb, colour = "creating", "32"
		case confighubv1.EntityAction_ENTITY_ACTION_DELETE:
			verb, colour = "deleting", "31"
		}
		line := verb + " " + entityName(ch)
		if obj := k8sObject(ch.GetTags()); obj != "" {
			line += " [" + obj + "]"
		}
		if ansi {
			line = "\x1b[" + colour + "m" + line + "\x1b[0m"
		}
		b.WriteString(line + "\n")
		for _, f := range ch.GetFields() {
			fmt.Fprintf(&b, "  %s: %s -> %s\n", strings.Join(f.GetPath(), "."), cmp.Or(f.GetOldJson(), "(absent)"), cmp.Or(f.GetNewJson(), "(absent)"))
		}
	}
	fmt.Fprintf(&b, "Summary:\n  Created: %d\n  Updated: %d\n  Deleted: %d\n", res.GetCreated(), res.GetUpdated(), res.GetDeleted())
	return b.String()
}

// entityName is "route r1 (service echo)".
func entityName(ch *confighubv1.EntityChange) string {
	s := ch.GetType()
	switch {
	case ch.GetName() != "":
		s += " " + ch.GetName()
	case ch.GetId() != "":
		s += " " + ch.GetId()
	}
	if ch.GetParent() != "" {
		s += " (" + ch.GetParent() + ")"
	}
	return s
}

func rollbackCmd(fs *flag.FlagSet) func(*invocation, []string) error {
	stream := fs.String("stream", config.DefaultStream, "stream")
	expected := fs.Uint64("expected-generation", 0, "roll back only if the stream's current generation is this one")
	return func(x *invocation, pos []string) error {
		if len(pos) != 1 {
			return usagef("rollback: want one GENERATION")
		}
		gen, err := parseGeneration("rollback", pos[0])
		if err != nil {
			return err
		}
		res, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.RollbackConfigResponse, error) {
			return c.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Stream: *stream, Generation: gen, ExpectedGeneration: *expected})
		})
		if err != nil {
			return err
		}
		return x.print(res, func() string {
			if res.GetUnchanged() {
				return fmt.Sprintf("stream %s: generation %d already has the hash of generation %d (%s): unchanged, no sink touched\n", *stream, res.GetGeneration(), gen, short(res.GetHash()))
			}
			return fmt.Sprintf("stream %s: generation %d is generation %d's configuration (%s), sent to %d sinks\n", *stream, res.GetGeneration(), gen, short(res.GetHash()), res.GetSinks())
		})
	}
}
