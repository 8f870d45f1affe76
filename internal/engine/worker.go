package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/sinkspec"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

var (
	errSuperseded     = errors.New("superseded by a newer generation") // cancel_in_flight
	errAttemptTimeout = errors.New("apply timed out")                  // options.timeout
	errSinkPanicked   = errors.New("the sink panicked")                // a recovered panic in Apply
)

type state = confighubv1.SinkState

const (
	statePending  = confighubv1.SinkState_SINK_STATE_PENDING
	stateApplying = confighubv1.SinkState_SINK_STATE_APPLYING
	stateApplied  = confighubv1.SinkState_SINK_STATE_APPLIED
	stateFailed   = confighubv1.SinkState_SINK_STATE_FAILED
	stateBackoff  = confighubv1.SinkState_SINK_STATE_BACKOFF
	stateWaiting  = confighubv1.SinkState_SINK_STATE_WAITING
	stateSkipped  = confighubv1.SinkState_SINK_STATE_SKIPPED
	stateDegraded = confighubv1.SinkState_SINK_STATE_DEGRADED
)

// worker owns one sink run here: a goroutine while its slot has work, plus the
// Runner's. Fields after ctx are guarded by Engine.mu, not held calling the sink.
type worker struct {
	*member
	e     *Engine
	kind  string
	s     sink.Sink
	pool  *slotPool         // nil: Capabilities.NoApplySlot
	scrub *strings.Replacer // nil: no secrets

	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	active sync.WaitGroup // the loop's goroutine while it runs, the Runner's

	m              slotMachine
	cancelApply    context.CancelCauseFunc
	health         string
	dataPlane      *confighubv1.DataPlaneStatus // the Runner's last report
	removed        bool
	running        bool           // the loop's goroutine runs
	slotHeld       bool           // holds a slot of pool
	slotQueued     bool           // waits in pool's queue
	record         *store.Applied // to record off the lock
	lastAppliedCfg *config.Config
	lastFailedCfg  *config.Config
	lastFailedErr  *sink.Error

	applyErr            string
	applyErrCode        string
	entityErrors        []*confighubv1.EntityError
	entityErrorsOmitted uint32 // beyond those kept (boundError)
	lastDur             time.Duration
	lastAppliedTime     time.Time
	appliesTotal        uint64
	prevErr             string // the error the last success cleared
	prevErrCode         string
	published           *confighubv1.SinkStatus
}

// newWorker builds the worker of s. e.mu is held.
func newWorker(e *Engine, spec *confighubv1.Sink, opts sinkspec.Options, s sink.Sink, caps sink.Capabilities) *worker {
	ctx, cancel := context.WithCancel(e.ctx)
	pool := e.slots
	switch {
	case caps.NoApplySlot:
		pool = nil
	case caps.Gateway:
		pool = e.gatewaySlots
	}
	w := &worker{
		member: &member{name: spec.GetName(), spec: spec, opts: opts, gateway: caps.Gateway, st: e.stream(spec.GetStream())},
		e:      e,
		kind:   spec.GetKind(),
		s:      s,
		pool:   pool,
		scrub:  e.scrubber(spec),
		ctx:    ctx,
		cancel: cancel,
		kick:   make(chan struct{}, 1),
		m:      newSlotMachine(spec.GetStream(), opts),
	}
	w.member.w = w
	return w
}

// scrubText replaces the sink's secrets in s.
func (w *worker) scrubText(s string) string {
	if w.scrub == nil {
		return s
	}
	return w.scrub.Replace(s)
}

// wake signals the loop's goroutine, or starts one. e.mu is held.
func (w *worker) wake() {
	if w.running {
		kick(w.kick)
	} else if !w.removed && !w.e.stopped && w.ctx.Err() == nil {
		w.running = true
		w.goRun(w.loop)
	}
}

// goRun runs f in a goroutine of the worker. e.mu is held.
func (w *worker) goRun(f func()) {
	w.active.Add(1)
	w.e.wg.Go(func() {
		defer w.active.Done()
		f()
	})
}

// idle ends the loop's goroutine unless a wake came since it found nothing to do.
func (w *worker) idle() bool {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	select {
	case <-w.kick:
		return false
	default:
		w.running = false
		return true
	}
}

// kick signals c without blocking.
func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// offer puts a new generation in the slot (latest wins). e.mu is held.
func (w *worker) offer(cfg *config.Config, now time.Time) {
	coalesced, cancelInFlight := w.m.offer(cfg, now)
	if coalesced {
		w.e.metrics.Coalesced(w.name, w.kind)
	}
	if cancelInFlight && w.cancelApply != nil {
		w.cancelApply(errSuperseded)
	}
	if !w.slotQueued { // a queued worker decides again when handed the slot
		w.wake()
	}
}

func (w *worker) runRunner(r sink.Runner) {
	defer func() {
		if p := recover(); p != nil {
			w.e.log.Error("sink runner panicked", "sink", w.name, "panic", w.scrubText(fmt.Sprint(p)), "stack", string(debug.Stack()))
			notifier{w}.Health(fmt.Errorf("runner panicked: %v", p))
		}
	}()
	r.Run(w.ctx, notifier{w})
}

func (w *worker) loop() {
	e := w.e
	defer func() {
		e.mu.Lock()
		w.releaseSlot()
		e.mu.Unlock()
	}()
	for {
		if w.ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		now := e.clock.Now()
		d := w.decide(now)
		if d.kind == actApply && !w.pool.acquire(w) { // queued: sleep until handed the slot
			w.m.queued(w.pool.name, w.pool.max, len(w.pool.queue))
			w.unlock()
			if !w.wait(0) {
				return
			}
			continue
		}
		if d.kind != actApply {
			w.releaseSlot()
			w.unlock()
			switch d.kind {
			case actWait:
				if !w.wait(d.until.Sub(now)) {
					return
				}
			case actIdle, actGate: // until woken
				if w.idle() {
					return
				}
			}
			continue
		}
		cfg := d.cfg
		attemptCtx, cancelAttempt := context.WithCancelCause(w.ctx)
		w.cancelApply = cancelAttempt
		w.m.start(cfg, e.clock.Now())
		w.unlock()

		timer := e.clock.AfterFunc(w.opts.Timeout, func() { cancelAttempt(errAttemptTimeout) })
		start := e.clock.Now()
		err := w.apply(attemptCtx, cfg)
		dur := e.clock.Since(start)
		timer.Stop()
		cause := context.Cause(attemptCtx)
		cancelAttempt(nil)

		e.mu.Lock()
		w.releaseSlot()
		w.finish(cfg, err, cause, dur)
		w.unlock()
	}
}

// unlock reports state and status, releases e.mu, then records what the sink applied.
func (w *worker) unlock() {
	w.reportState()
	w.emit()
	a := w.record
	w.record = nil
	w.e.mu.Unlock()
	if a == nil || w.e.recorder == nil {
		return
	}
	if err := w.e.recorder.RecordApplied(w.ctx, *a); err != nil && w.ctx.Err() == nil {
		w.e.log.Warn("recording the applied generation failed; it is recorded again after the next apply", "sink", w.name, "generation", a.Generation, "error", err)
	}
}

// releaseSlot gives up w's slot or queue place, waking the next. e.mu is held.
func (w *worker) releaseSlot() {
	if next := w.pool.release(w); next != nil {
		next.wake()
	}
}

// wait blocks until a kick, d (if > 0), or stop (false).
func (w *worker) wait(d time.Duration) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := w.e.clock.NewTimer(d)
		defer t.Stop()
		timer = t.Chan()
	}
	select {
	case <-w.kick:
	case <-timer:
	case <-w.ctx.Done():
		return false
	}
	return true
}

// decide asks the machine, reporting a hash skip and registering a gated waiter. e.mu is held.
func (w *worker) decide(now time.Time) decision {
	e := w.e
	d := w.m.decide(now, func(gen uint64) gateVerdict { return e.gate(w, gen) })
	switch d.kind {
	case actSkip:
		w.report(applyOutcome{sink: w.name, kind: w.kind, stream: w.st.name, cfg: d.cfg, result: ResultSkipped, at: now}, d.prevApplied, false)
	case actGate:
		w.st.waiters[w] = struct{}{}
		if d.blocked { // later waves wait on this sink
			e.kickWaiters(w.st)
			w.st.waiters[w] = struct{}{}
		}
	}
	return d
}

// reportState passes state changes to the metrics. e.mu is held.
func (w *worker) reportState() {
	w.m.eachChange(func(c stateChange) {
		w.e.metrics.StateChanged(w.name, w.kind, c.from, c.to)
	})
}

// apply calls the sink, turning a panic into an error.
func (w *worker) apply(ctx context.Context, cfg *config.Config) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.e.log.Error("sink panicked", "sink", w.name, "generation", cfg.Generation, "panic", w.scrubText(fmt.Sprint(p)), "stack", string(debug.Stack()))
			err = &sink.Error{Code: sink.CodeInternal, Message: fmt.Sprintf("the sink panicked: %v", p), Err: errSinkPanicked}
		}
	}()
	return w.s.Apply(ctx, cfg)
}

// finish passes an attempt's outcome to the machine and reports it. e.mu is held.
func (w *worker) finish(cfg *config.Config, err, cause error, dur time.Duration) {
	now := w.e.clock.Now()
	w.cancelApply = nil
	w.lastDur = dur
	if w.ctx.Err() != nil {
		w.m.outcome(attemptOutcome{kind: outAbandoned, cfg: cfg}, now)
		return
	}
	o, f := w.classify(cfg, err, cause, w.e.rnd)
	t := w.m.outcome(o, now)
	w.report(w.outcomeOf(o, t, f, dur, now), t.prevApplied, t.kickWaiters)
}

// report shows, measures and logs ev, and updates the stream's counts. e.mu is held.
func (w *worker) report(ev applyOutcome, prevApplied uint64, kick bool) {
	w.show(ev)
	w.reportState()
	ev.measure(w.e.metrics)
	ev.logTo(w.e.log)
	if prevApplied != w.m.appliedGen {
		w.e.recount(w.st, 0, prevApplied, w.m.appliedGen)
	} else if kick {
		w.e.kickWaiters(w.st) // later waves skip it now
	}
}

// emit publishes the sink's status if it changed. e.mu is held.
func (w *worker) emit() {
	if w.removed {
		return
	}
	st := w.status()
	if w.published != nil && sameStatus(w.published, st) {
		return
	}
	w.published = st
	w.e.broker.PutSink(st)
}

func (w *worker) status() *confighubv1.SinkStatus {
	st := &confighubv1.SinkStatus{Sink: w.name, Kind: w.kind, Stream: w.st.name, State: w.m.state, Reason: w.m.reason,
		DesiredGeneration: w.m.desiredGen, DesiredHash: w.m.desiredHash, AppliedGeneration: w.m.appliedGen, AppliedHash: w.m.appliedHash,
		Attempts: w.m.attempts, Coalesced: w.m.coalesced, RejectedGeneration: w.m.rejectedGen, AppliesTotal: w.appliesTotal,
		EntityErrors: w.entityErrors, EntityErrorsOmitted: w.entityErrorsOmitted, PreviousError: w.prevErr, PreviousErrorCode: w.prevErrCode,
		ExcludedEntities: w.m.fallback.excluded, FallbackGeneration: w.m.fallback.gen, FallbackHash: w.m.fallback.hash, DataPlane: w.dataPlane}
	st.LastError, st.LastErrorCode = w.shownError()
	if !w.m.nextRetry.IsZero() {
		st.NextRetryTime = timestamppb.New(w.m.nextRetry)
	}
	if w.lastDur > 0 {
		st.LastApplyDuration = durationpb.New(w.lastDur)
	}
	if !w.lastAppliedTime.IsZero() {
		st.LastAppliedTime = timestamppb.New(w.lastAppliedTime)
	}
	return st
}

// shownError is the Runner's unreachable, else the last apply's error.
func (w *worker) shownError() (msg, code string) {
	if w.health != "" {
		return "unreachable: " + w.health, string(sink.CodeUnreachable)
	}
	return w.applyErr, w.applyErrCode
}

// sameStatus compares two status() results, entity errors by identity:
// ~0.1 µs against proto.Equal's 3-10 µs (BenchmarkSameStatus).
func sameStatus(a, b *confighubv1.SinkStatus) bool {
	if a.State != b.State || a.DesiredGeneration != b.DesiredGeneration || a.DesiredHash != b.DesiredHash ||
		a.AppliedGeneration != b.AppliedGeneration || a.AppliedHash != b.AppliedHash || a.Attempts != b.Attempts ||
		a.LastError != b.LastError || a.LastErrorCode != b.LastErrorCode || a.Coalesced != b.Coalesced ||
		a.Reason != b.Reason || a.RejectedGeneration != b.RejectedGeneration || a.AppliesTotal != b.AppliesTotal ||
		a.PreviousError != b.PreviousError || a.PreviousErrorCode != b.PreviousErrorCode ||
		len(a.EntityErrors) != len(b.EntityErrors) || a.EntityErrorsOmitted != b.EntityErrorsOmitted || a.FallbackGeneration != b.FallbackGeneration ||
		a.FallbackHash != b.FallbackHash || len(a.ExcludedEntities) != len(b.ExcludedEntities) || a.DataPlane != b.DataPlane {
		return false
	}
	if len(a.EntityErrors) > 0 && a.EntityErrors[0] != b.EntityErrors[0] {
		return false
	}
	return a.NextRetryTime.AsTime().Equal(b.NextRetryTime.AsTime()) &&
		a.LastApplyDuration.AsDuration() == b.LastApplyDuration.AsDuration() &&
		a.LastAppliedTime.AsTime().Equal(b.LastAppliedTime.AsTime())
}

func short(h string) string { return h[:min(len(h), 12)] }

// notifier is what a sink's Runner talks to; it never waits for an apply.
type notifier struct{ w *worker }

var _ sink.Notifier = notifier{}

// locked runs f with e.mu held, unless the worker was removed.
func (n notifier) locked(f func(w *worker)) {
	n.w.e.mu.Lock()
	defer n.w.e.mu.Unlock()
	if !n.w.removed {
		f(n.w)
	}
}

// Resync forces the next apply and ends a backoff wait.
func (n notifier) Resync(reason string) {
	n.locked(func(w *worker) {
		w.m.requestResync(reason)
		w.e.log.Info("resync requested", "sink", w.name, "reason", reason)
		w.wake()
	})
}

func (n notifier) Health(err error) {
	n.locked(func(w *worker) {
		h := ""
		if err != nil {
			h = w.scrubText(cmp.Or(err.Error(), "unreachable"))
		}
		if h == w.health {
			return
		}
		if h != "" {
			w.e.log.Warn("sink unreachable", "sink", w.name, "error", h)
		} else {
			w.e.log.Info("sink reachable again", "sink", w.name)
			w.m.reachable()
			w.wake()
		}
		w.health = h
		w.emit()
	})
}

func (n notifier) DataPlane(dp *confighubv1.DataPlaneStatus) {
	n.locked(func(w *worker) {
		w.dataPlane = dp
		w.emit()
	})
}
