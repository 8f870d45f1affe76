package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
)

func kongSpec(name, url string) *confighubv1.Sink {
	return &confighubv1.Sink{Name: name, Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: url}}}
}

func isGateway(name string) bool { return strings.HasPrefix(name, "gw-") }

// scenarioFleet: scenario 2.
func scenarioFleet(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	fl, err := startFleet(o.gateways)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	log("  %d gateways up", len(fl.urls))
	rows, err := fleetTiming(ctx, o, fl, log)
	if err != nil {
		return nil, err
	}
	mem, err := fleetMemory(ctx, o, fl, log)
	if err != nil {
		return nil, err
	}
	return append(rows, mem...), nil
}

func fleetTiming(ctx context.Context, o opts, fl *fleet, log func(string, ...any)) ([]Row, error) {
	e, err := newEnv(ctx, envOptions{kongURLs: fl.urls})
	if err != nil {
		return nil, err
	}
	defer e.close()
	p := newPoster()
	defer p.close()
	base := genConfig(1 << 20)
	n := len(fl.urls)
	// Twice -runs: the run-to-run spread on this machine is wider than
	// the 10% under test, so the medians need 20 runs a side.
	runs := 2 * o.runs
	// applies counts the POSTs the sinks made (AppliesTotal) and the
	// attempts beyond the first, so a double apply (a resync racing the
	// first apply) or a retry shows in the note.
	prevApplies := uint64(0)
	var extraApplies, retried, kept int
	stamp := 0
	hubRun := func() (time.Duration, error) {
		stamp++
		cfg := stamped(base, stamp)
		wctx, stopWait := context.WithTimeout(ctx, 2*time.Minute)
		defer stopWait()
		w := watchApplied(wctx, e, isGateway, n)
		t0 := time.Now()
		gen, err := e.push(ctx, cfg)
		if err != nil {
			return 0, err
		}
		at, err := w.wait(gen)
		if err != nil {
			return 0, err
		}
		applies, retries, errs := fleetCounts(e, gen)
		if kept++; kept > 1 { // the first run warms up
			extraApplies += int(applies-prevApplies) - n
			retried += retries
		}
		prevApplies = applies
		if o.verbose && (retries > 0 || errs != "") {
			log("  run %d: %d sinks needed more than one attempt; last errors: %s", kept-1, retries, errs)
		}
		log("  run %d: hub %.0f ms", kept-1, ms(at.Sub(t0)))
		return at.Sub(t0), nil
	}
	loopRun := func() (time.Duration, error) {
		stamp++
		cfg := stamped(base, stamp)
		t0 := time.Now()
		if err := p.postAll(ctx, fl.urls, cfg, engine.DefaultMaxConcurrentApplies); err != nil {
			return 0, fmt.Errorf("baseline: %w", err)
		}
		d := time.Since(t0)
		log("  plain loop %.0f ms", ms(d))
		return d, nil
	}
	// One warm-up round: connections, first parse.
	t, load, err := o.interleaved(2, 1, runs, hubRun, loopRun)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("2 %d gateways applied a 1 MiB config", n)
	r := ratioRow(name, "ms", medianMS(t[0]), medianMS(t[1]), 1.1, runs)
	r.withSpread(t[0], t[1], load)
	r.Note = fmt.Sprintf("baseline: the same POST /config?check_hash=1&flatten_errors=1 from a plain loop, %d in flight (--max-concurrent-applies), interleaved with the hub in random order; hub: %d applies beyond one per gateway per run, %d sinks retried, over %d runs",
		engine.DefaultMaxConcurrentApplies, extraApplies, retried, runs)
	return []Row{r}, nil
}

// appliedWatch follows the stream's status for one run and tells when
// `want` matching sinks applied a generation; its view counts as the
// changes arrive (O(1) each: with 1,000 sinks and about 4,000 changes per
// push a rescan per change would cost the harness, the hub's process,
// tens of ms of CPU per run, which the plain loop does not pay).
type appliedWatch struct {
	ch    <-chan *confighubv1.WatchStatusResponse
	match func(string) bool
	want  int
	ctx   context.Context
}

func watchApplied(ctx context.Context, e *env, match func(string) bool, want int) *appliedWatch {
	return &appliedWatch{ch: e.hub.Watch(ctx, config.DefaultStream, 0), match: match, want: want, ctx: ctx}
}

// wait returns when the sinks applied gen (the time the change arrived).
func (w *appliedWatch) wait(gen uint64) (time.Time, error) {
	v := hubclient.NewStatusView(gen, w.match)
	for ev := range w.ch {
		v.Apply(ev)
		if applied, _, _ := v.Counts(); gen > 0 && applied >= w.want {
			return time.Now(), nil
		}
	}
	applied, _, _ := v.Counts()
	return time.Time{}, fmt.Errorf("%d of %d sinks applied generation %d: %w", applied, w.want, gen, w.ctx.Err())
}

// fleetCounts sums the sinks' applies (successful POSTs), counts the
// sinks that took more than one attempt at gen, and names a last error.
func fleetCounts(e *env, gen uint64) (applies uint64, retries int, lastErr string) {
	st, _ := e.hub.Status("")
	for _, s := range st.GetSinks() {
		applies += s.GetAppliesTotal()
		if s.GetDesiredGeneration() == gen && s.GetAttempts() > 1 {
			retries++
		}
		if s.GetLastError() != "" && lastErr == "" {
			lastErr = s.GetSink() + ": " + s.GetLastError()
		}
	}
	return applies, retries, lastErr
}

// procStatusMiB reads a kB field of /proc/self/status.
func procStatusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusField(string(b), field)
}

// statusField is a kB field of a /proc status file, in MiB.
func statusField(status, field string) float64 {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
