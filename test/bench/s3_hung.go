package main

import (
	"context"
	"fmt"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// hungGateways is the fleet size of scenarios 3 and 6 (in this process).
func hungGateways(o opts) int { return min(100, o.gateways) }

// scenarioHungKonnect: scenario 3. One hub with kong sinks; the runs
// alternate between no Konnect sink and a Konnect-like sink that hangs
// (it waits for a gateway as konnect does, then never returns until its
// attempt is cancelled), already hung when the push arrives.
func scenarioHungKonnect(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	gws, urls, err := inProcFleet(hungGateways(o))
	if err != nil {
		return nil, err
	}
	defer closeGateways(gws)
	e, err := newEnv(ctx, envOptions{kongURLs: urls})
	if err != nil {
		return nil, err
	}
	defer e.close()
	tctx, stopTracker := context.WithCancel(ctx)
	defer stopTracker()
	tr := startTracker(tctx, e.hub)
	base := genConfig(1 << 20)
	n := len(urls)
	const konnect = "konnect-hung"
	hungSpec := benchSpec(konnect, 0, true, false, &confighubv1.SinkOptions{Gate: confighubv1.Gate_GATE_ANY_GATEWAY})

	stamp := 0
	converge := func() (time.Duration, error) {
		stamp++
		cfg := stamped(base, stamp)
		t0 := time.Now()
		gen, err := e.push(ctx, cfg)
		if err != nil {
			return 0, err
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		at, err := tr.wait(wctx, isGateway, n, gen)
		return at.Sub(t0), err
	}
	// A run takes a few hundred ms and differs from the next by more than
	// the 5% under test on a shared machine: three times the runs of the
	// other fast scenarios make the medians steadier.
	runs := 3 * o.runs
	// The first push makes a generation for the hung sink to hang on.
	if _, err := converge(); err != nil {
		return nil, err
	}
	// Hang the Konnect sink on the current generation, then push.
	withHung := func() (time.Duration, error) {
		if err := e.putSinks(ctx, hungSpec); err != nil {
			return 0, err
		}
		if err := waitStarted(ctx, e.applies, konnect); err != nil {
			return 0, err
		}
		d, err := converge()
		if err != nil {
			return 0, err
		}
		return d, e.hub.DeleteSink(ctx, konnect)
	}
	t, load, err := o.interleaved(3, 1, runs, withHung, converge)
	if err != nil {
		return nil, err
	}
	with, without := t[0], t[1]
	log("  %d gateways: with hung Konnect %.0f ms, without %.0f ms", n, medianMS(with), medianMS(without))
	r := ratioRow(fmt.Sprintf("3 %d gateways converge, hung Konnect / none", n), "ms", medianMS(with), medianMS(without), 1.05, runs)
	r.withSpread(with, without, load)
	r.Note = "Konnect stand-in: an in-process non-gateway sink with konnect's gate (GATE_ANY_GATEWAY) whose apply never returns; it holds a slot of the non-gateway apply pool, none of the gateways'"
	return []Row{r}, nil
}

// waitStarted waits until the bench sink name started any apply.
func waitStarted(ctx context.Context, l *applyLog, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		l.mu.Lock()
		n := len(l.started[name])
		l.mu.Unlock()
		if n > 0 {
			l.mu.Lock()
			delete(l.started, name)
			l.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sink %s never started an apply: %w", name, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
