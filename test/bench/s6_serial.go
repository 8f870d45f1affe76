package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine"
)

// serialGateways is the fleet of scenario 6 (a KIC deployment's gateways).
const serialGateways = 10

// kicLoop is Kong Ingress Controller's KongClient.Update before its Konnect upload had its own loop
// (internal/dataplane/kong_client.go, e.g. at commit 95af584): Update
// holds c.lock throughout, sends to every gateway (sendOutToGatewayClients)
// and then to Konnect (maybeSendOutToKonnectClient), and one ticker loop
// calls it, so the next config waits for the Konnect upload. PR 6352 moved
// Konnect to its own loop.
type kicLoop struct {
	mu      sync.Mutex
	p       *poster
	urls    []string
	konnect time.Duration
}

// update sends cfg to every gateway (64 in flight), calls gatewaysDone,
// then "uploads to Konnect" (takes l.konnect), all under the lock.
func (l *kicLoop) update(ctx context.Context, cfg []byte, gatewaysDone func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.p.postAll(ctx, l.urls, cfg, engine.DefaultMaxConcurrentApplies); err != nil {
		return err
	}
	gatewaysDone()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(l.konnect):
	}
	return nil
}

// scenarioSerial: scenario 6. Config A is sent; as soon as the gateways
// have it (Konnect now busy with A for konnect-time), config B arrives:
// time until every gateway has B.
func scenarioSerial(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	gws, urls, err := inProcFleet(serialGateways)
	if err != nil {
		return nil, err
	}
	defer closeGateways(gws)
	runs := 3
	if o.quick {
		runs = 1
	}
	base := genConfig(1 << 20)
	stamp := 0

	// Baseline: the serial loop.
	p := newPoster()
	defer p.close()
	loop := &kicLoop{p: p, urls: urls, konnect: o.konnect}
	loopRun := func() (time.Duration, error) {
		stamp++
		a := stamped(base, stamp)
		stamp++
		b := stamped(base, stamp)
		gotA := make(chan struct{})
		errA := make(chan error, 1)
		go func() { errA <- loop.update(ctx, a, func() { close(gotA) }) }()
		select {
		case <-gotA:
		case err := <-errA:
			return 0, fmt.Errorf("serial loop A: %w", err)
		}
		t0 := time.Now()
		var tB time.Duration
		if err := loop.update(ctx, b, func() { tB = time.Since(t0) }); err != nil {
			return 0, fmt.Errorf("serial loop B: %w", err)
		}
		return tB, <-errA
	}

	// The hub: kong sinks and a Konnect stand-in that takes konnect-time.
	e, err := newEnv(ctx, envOptions{kongURLs: urls})
	if err != nil {
		return nil, err
	}
	defer e.close()
	const konnect = "konnect-slow"
	if err := e.putSinks(ctx, benchSpec(konnect, o.konnect, false, false, &confighubv1.SinkOptions{Gate: confighubv1.Gate_GATE_ANY_GATEWAY})); err != nil {
		return nil, err
	}
	tctx, stopTracker := context.WithCancel(ctx)
	defer stopTracker()
	tr := startTracker(tctx, e.hub)
	hubRun := func() (time.Duration, error) {
		stamp++
		genA, err := e.push(ctx, stamped(base, stamp))
		if err != nil {
			return 0, err
		}
		// Konnect starts on A once a gateway applied it: push B then.
		if err := waitStartedGen(ctx, e.applies, konnect, genA); err != nil {
			return 0, err
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := tr.wait(wctx, isGateway, len(urls), genA); err != nil {
			return 0, err
		}
		stamp++
		t0 := time.Now()
		genB, err := e.push(ctx, stamped(base, stamp))
		if err != nil {
			return 0, err
		}
		at, err := tr.wait(wctx, isGateway, len(urls), genB)
		if err != nil {
			return 0, err
		}
		// Let Konnect finish B before the next run (the loop's or the
		// hub's): each starts with no upload under way.
		_, err = e.applies.waitDone(wctx, konnect, genB)
		return at.Sub(t0), err
	}
	// Every run waits out a Konnect upload or two, so a few runs only,
	// after a warm-up round (connections); a new random order each round
	// as elsewhere.
	t, load, err := o.interleaved(6, 1, runs, hubRun, loopRun)
	if err != nil {
		return nil, err
	}
	hubT, baseT := t[0], t[1]
	log("  %d gateways, Konnect %v: hub %.0f ms, serial loop %.0f ms", len(urls), o.konnect, medianMS(hubT), medianMS(baseT))
	r := Row{Scenario: fmt.Sprintf("6 %d gateways get B while Konnect (%v) uploads A", len(urls), o.konnect), Unit: "ms",
		Hub: medianMS(hubT), Baseline: medianMS(baseT), Runs: runs, Target: "ratio < 1 (hub not slower)",
		Note: "baseline: KIC's pattern before its per-destination loops (95af584), gateways then Konnect in one loop under one lock; runs of each in random order"}
	r.withSpread(hubT, baseT, load)
	r.Ratio = r.Hub / r.Baseline
	r.OK = r.Ratio < 1
	return []Row{r}, nil
}

// waitStartedGen waits until the bench sink name started generation gen.
func waitStartedGen(ctx context.Context, l *applyLog, name string, gen uint64) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if s, _ := l.times(name, gen); !s.IsZero() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sink %s never started generation %d: %w", name, gen, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
