package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

func cmdHistory(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("history", g, errw, "history [--stream s] [--limit n] [--before GENERATION]")
	stream := fs.String("stream", config.DefaultStream, "stream")
	limit := fs.Uint("limit", 20, "at most this many generations (the hub answers at most 1000)")
	before := fs.Uint64("before", 0, "only generations older than this one (the next page)")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	res, err := listCall(ctx, g, "history", pos, func(ctx context.Context, c *hubclient.Client) (*confighubv1.ListGenerationsResponse, error) {
		return c.Hub.ListGenerations(ctx, &confighubv1.ListGenerationsRequest{Stream: *stream, Before: *before, Limit: uint32(*limit)})
	})
	if err != nil {
		return err
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	_, err = io.WriteString(out, renderHistory(res, time.Now()))
	return err
}

// renderHistory is the history table: one generation a line, newest first.
func renderHistory(res *confighubv1.ListGenerationsResponse, now time.Time) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GENERATION\tACCEPTED\tPUSHER\tPEER\tSIZE\tENTITIES\tOUTCOME\tLABELS")
	for _, gr := range res.GetGenerations() {
		accepted := "-"
		if t := gr.GetAcceptTime(); t != nil {
			accepted = roundDur(now.Sub(t.AsTime())) + " ago"
		}
		labels := labelText(gr.GetLabels(), gr.GetRollbackOf() > 0)
		if gr.GetRollbackOf() > 0 {
			labels = strings.TrimSpace(fmt.Sprintf("rollback to %d %s", gr.GetRollbackOf(), labels))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", gr.GetGeneration(), accepted, orDash(gr.GetPusher()), orDash(gr.GetPeer()),
			humanBytes(gr.GetSize()), entityText(gr.GetEntities()), outcomeText(gr), orDash(labels))
	}
	_ = tw.Flush()
	if res.GetNextBefore() > 0 {
		fmt.Fprintf(&b, "(older: --before %d)\n", res.GetNextBefore())
	}
	return b.String()
}

// outcomeText is "converged 3/3", "converging 1/3", "rejected by 2 of 3".
func outcomeText(gr *confighubv1.GenerationRecord) string {
	n := fmt.Sprintf("%d/%d", gr.GetSinksApplied(), gr.GetSinksTotal())
	switch gr.GetOutcome() {
	case confighubv1.GenerationOutcome_GENERATION_OUTCOME_CONVERGED:
		return "converged " + n
	case confighubv1.GenerationOutcome_GENERATION_OUTCOME_CONVERGING:
		return "converging " + n
	case confighubv1.GenerationOutcome_GENERATION_OUTCOME_REJECTED:
		return fmt.Sprintf("rejected by %d of %d", gr.GetSinksRejected(), gr.GetSinksTotal())
	case confighubv1.GenerationOutcome_GENERATION_OUTCOME_SUPERSEDED:
		return "superseded " + n
	}
	return "-"
}

// entityText is "2 services, 3 routes, 1 plugin" (the most numerous
// first).
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

// labelText is "k=v,k2=v2"; for a rollback without the label that names
// the generation it rolls back to, which "rollback to N" says.
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdDiff(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("diff", g, errw, "diff [FROM [TO]] [--stream s] [--sink NAME] [--color auto|always|never]")
	stream := fs.String("stream", config.DefaultStream, "stream")
	sinkName := fs.String("sink", "", "what this FAILED or DEGRADED sink last applied against what it was asked to apply")
	color := fs.String("color", "auto", "colour the lines: auto (on a terminal), always or never")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 2 {
		return usagef("diff: at most two generations (FROM TO), got %d arguments", len(pos))
	}
	var gens [2]uint64
	for i, p := range pos {
		if gens[i], err = strconv.ParseUint(p, 10, 64); err != nil || gens[i] == 0 {
			return usagef("diff: %q is not a generation (a number from 1)", p)
		}
	}
	if *sinkName != "" && len(pos) > 0 {
		return usagef("diff: --sink takes no generations")
	}
	if err := checkOutput(g); err != nil {
		return err
	}
	ansi := false
	switch *color {
	case "always":
		ansi = true
	case "auto":
		ansi = isTerminal(out)
	case "never":
	default:
		return usagef("diff: --color %q: want auto, always or never", *color)
	}
	c, closeConn, err := dial(g)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	res, err := c.Hub.DiffConfig(ctx, &confighubv1.DiffConfigRequest{Stream: *stream, From: gens[0], To: gens[1], Sink: *sinkName})
	if err != nil {
		return &cliError{"diff", err}
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	_, err = io.WriteString(out, renderDiff(res, ansi))
	return err
}

const (
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiReset  = "\x1b[0m"
)

// renderDiff prints a diff as deck diff does: one line per entity
// ("creating service x", "updating route y", "deleting plugin z"), the
// changed fields of an update under it, then a summary.
func renderDiff(res *confighubv1.DiffConfigResponse, ansi bool) string {
	var b strings.Builder
	what := fmt.Sprintf("stream %s: generation %d (%s) -> %d (%s)", res.GetStream(), res.GetFrom(), short(res.GetFromHash()), res.GetTo(), short(res.GetToHash()))
	if res.GetSink() != "" {
		what = fmt.Sprintf("sink %s (stream %s): applied generation %d (%s) -> asked generation %d (%s)", res.GetSink(), res.GetStream(), res.GetFrom(), short(res.GetFromHash()), res.GetTo(), short(res.GetToHash()))
	}
	b.WriteString(what + "\n")
	for _, ch := range res.GetChanges() {
		verb, colour := "updating", ansiYellow
		switch ch.GetAction() {
		case confighubv1.EntityAction_ENTITY_ACTION_CREATE:
			verb, colour = "creating", ansiGreen
		case confighubv1.EntityAction_ENTITY_ACTION_DELETE:
			verb, colour = "deleting", ansiRed
		}
		line := verb + " " + entityName(ch)
		if obj := k8sObject(ch.GetTags()); obj != "" {
			line += " [" + obj + "]"
		}
		if ansi {
			line = colour + line + ansiReset
		}
		b.WriteString(line + "\n")
		for _, f := range ch.GetFields() {
			fmt.Fprintf(&b, "  %s: %s -> %s\n", strings.Join(f.GetPath(), "."), orAbsent(f.GetOldJson()), orAbsent(f.GetNewJson()))
		}
	}
	fmt.Fprintf(&b, "Summary:\n  Created: %d\n  Updated: %d\n  Deleted: %d\n", res.GetCreated(), res.GetUpdated(), res.GetDeleted())
	return b.String()
}

// entityName is "route r1 (service echo)"; a key-auth credential has no
// name to show (its key is its name), so its id or parent names it.
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

func orAbsent(js string) string {
	if js == "" {
		return "(absent)"
	}
	return js
}

func cmdRollback(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("rollback", g, errw, "rollback GENERATION [--stream s] [--expected-generation n]")
	stream := fs.String("stream", config.DefaultStream, "stream")
	expected := fs.Uint64("expected-generation", 0, "roll back only if the stream's current generation is this one")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("rollback: want one GENERATION")
	}
	gen, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil || gen == 0 {
		return usagef("rollback: %q is not a generation (a number from 1)", pos[0])
	}
	if err := checkOutput(g); err != nil {
		return err
	}
	c, closeConn, err := dial(g)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	res, err := c.Hub.RollbackConfig(ctx, &confighubv1.RollbackConfigRequest{Stream: *stream, Generation: gen, ExpectedGeneration: *expected})
	if err != nil {
		return &cliError{"rollback", err}
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	if res.GetUnchanged() {
		fmt.Fprintf(out, "stream %s: generation %d already has the hash of generation %d (%s): unchanged, no sink touched\n", *stream, res.GetGeneration(), gen, short(res.GetHash()))
		return nil
	}
	fmt.Fprintf(out, "stream %s: generation %d is generation %d's configuration (%s), sent to %d sinks\n", *stream, res.GetGeneration(), gen, short(res.GetHash()), res.GetSinks())
	return nil
}
