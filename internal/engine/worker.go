package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/sinkspec"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

var (
	// errSuperseded cancels an apply in flight when a newer generation
	// arrives and the sink has cancel_in_flight.
	errSuperseded = errors.New("superseded by a newer generation")
	// errAttemptTimeout cancels an apply that ran past options.timeout.
	errAttemptTimeout = errors.New("apply timed out")
	// errSinkPanicked marks the error of a recovered panic in Apply.
	errSinkPanicked = errors.New("the sink panicked")
)

type (
	state = confighubv1.SinkState
)

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

// worker owns one sink: one goroutine that applies the newest generation of
// its slot, running while the slot has work (an idle sink costs no
// goroutine), plus the sink's Runner goroutine if it has one. Every field
// below "under e.mu" is guarded by the engine's lock; the goroutine never
// holds the lock while calling the sink.
type worker struct {
	// e is the engine: its lock, and the stream-wide gate, counts and
	// waiters; deps the rest the worker takes from its options.
	e    *Engine
	deps *workerDeps
	name string
	kind string
	spec *confighubv1.Sink
	opts sinkspec.Options
	s    sink.Sink
	caps sink.Capabilities
	st   *stream
	// pool is the apply-slot pool of the sink: gateways' or the others';
	// nil for a sink whose applies take no slot (Capabilities.NoApplySlot).
	pool *slotPool
	// scrub replaces the spec's secrets in error texts; nil when none.
	scrub *strings.Replacer
	// specSize is proto.Size(spec), as counted in Engine.specBytes.
	specSize int

	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	// active counts the worker's goroutines (the loop while it runs, and
	// the Runner's).
	active sync.WaitGroup

	// under e.mu: m decides (machine.go); the rest is what the worker
	// keeps to act on its decisions and to report them.
	m              slotMachine
	cancelApply    context.CancelCauseFunc
	health         string
	dataPlane      *confighubv1.DataPlaneStatus // the Runner's last DataPlane report
	removed        bool
	running        bool           // the loop's goroutine runs
	slotHeld       bool           // holds a slot of pool
	slotQueued     bool           // waits in pool's queue
	record         *store.Applied // to be recorded by the goroutine
	lastAppliedCfg *config.Config
	lastFailedCfg  *config.Config
	lastFailedErr  *sink.Error

	// under e.mu: the status fields the machine does not decide.
	applyErr     string
	applyErrCode string
	entityErrors []*confighubv1.EntityError
	// entityErrorsOmitted: entity errors beyond those kept (boundError).
	entityErrorsOmitted uint32
	lastDur             time.Duration
	lastAppliedTime     time.Time
	appliesTotal        uint64
	prevErr             string // the error the last successful apply cleared
	prevErrCode         string
	published           *confighubv1.SinkStatus
}

// workerDeps are what every worker takes from its engine's options: the
// same for all, made once by New.
type workerDeps struct {
	clock    clockwork.Clock
	log      *slog.Logger
	metrics  Metrics
	recorder Recorder
	rnd      func() float64
	// redact cleans a sink's error text (Engine.redactError).
	redact func(*sink.Error, *strings.Replacer) *sink.Error
}

// newWorker builds the worker of s; caps is s.Describe(), asked before
// e.mu was taken. e.mu is held.
func newWorker(e *Engine, spec *confighubv1.Sink, opts sinkspec.Options, s sink.Sink, caps sink.Capabilities) *worker {
	ctx, cancel := context.WithCancel(e.ctx)
	pool := e.slots
	switch {
	case caps.NoApplySlot:
		pool = nil
	case caps.Gateway:
		pool = e.gatewaySlots
	}
	return &worker{
		scrub:  e.scrubber(spec),
		pool:   pool,
		e:      e,
		deps:   e.deps,
		name:   spec.GetName(),
		kind:   spec.GetKind(),
		spec:   spec,
		opts:   opts,
		s:      s,
		caps:   caps,
		st:     e.stream(spec.GetStream()),
		ctx:    ctx,
		cancel: cancel,
		kick:   make(chan struct{}, 1),
		m:      newSlotMachine(spec.GetStream(), opts),
	}
}

// scrubText replaces the sink's secrets in s.
func (w *worker) scrubText(s string) string {
	if w.scrub == nil {
		return s
	}
	return w.scrub.Replace(s)
}

// wake has the loop look at its slot again: it signals the loop's
// goroutine, or starts one. Never blocks. e.mu is held.
func (w *worker) wake() {
	if w.running {
		select {
		case w.kick <- struct{}{}:
		default:
		}
		return
	}
	if w.removed || w.e.stopped || w.ctx.Err() != nil {
		return
	}
	w.running = true
	w.goRun(w.loop)
}

// goRun runs f in a goroutine of the worker. e.mu is held (or the worker
// is not registered yet).
func (w *worker) goRun(f func()) {
	w.active.Add(1)
	w.e.wg.Add(1)
	go func() {
		defer w.e.wg.Done()
		defer w.active.Done()
		f()
	}()
}

// idle ends the loop's goroutine when no wake came since it decided there
// is nothing to do until one; the next wake starts another.
func (w *worker) idle() bool {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	select {
	case <-w.kick:
		return false
	default:
	}
	w.running = false
	return true
}

// offer puts a new generation in the slot (latest wins). e.mu is held.
func (w *worker) offer(cfg *config.Config, now time.Time) {
	coalesced, cancelInFlight := w.m.offer(cfg, now)
	if coalesced {
		w.deps.metrics.Coalesced(w.name, w.kind)
	}
	if cancelInFlight && w.cancelApply != nil {
		w.cancelApply(errSuperseded)
	}
	if w.slotQueued {
		// Queued for an apply slot: it decides again, with the newest
		// generation, when the slot is handed to it. Waking it now would
		// only make it take the lock to find it still queued.
		return
	}
	w.wake()
}

func (w *worker) runRunner(r sink.Runner) {
	defer func() {
		if p := recover(); p != nil {
			w.deps.log.Error("sink runner panicked", "sink", w.name, "panic", w.scrubText(fmt.Sprint(p)), "stack", string(debug.Stack()))
			notifier{w}.Health(fmt.Errorf("runner panicked: %v", p))
		}
	}()
	r.Run(w.ctx, notifier{w})
}

func (w *worker) loop() {
	e := w.e
	defer func() {
		// Hand a held slot on (or leave the queue) whatever the exit.
		e.mu.Lock()
		w.releaseSlot()
		e.mu.Unlock()
	}()
	for {
		if w.ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		now := w.deps.clock.Now()
		d := w.decide(now)
		if d.kind == actApply && !w.pool.acquire(w) {
			// Queued: PENDING once, then sleep until a release hands
			// this worker the slot (or a Resync, Health or stop wakes
			// it), and decide again.
			w.m.queued(w.pool.name, w.pool.max, w.pool.waiting())
			w.reportState()
			w.emit()
			rec := w.takeRecord()
			e.mu.Unlock()
			w.recordApplied(rec)
			if !w.wait(0) {
				return
			}
			continue
		}
		if d.kind != actApply {
			w.releaseSlot()
			w.emit()
			rec := w.takeRecord()
			e.mu.Unlock()
			w.recordApplied(rec)
			switch d.kind {
			case actWait:
				if !w.wait(d.until.Sub(now)) {
					return
				}
			case actIdle, actGate:
				if w.idle() {
					return
				}
			}
			continue
		}
		cfg := d.cfg
		attemptCtx, cancelAttempt := context.WithCancelCause(w.ctx)
		w.cancelApply = cancelAttempt
		w.m.start(cfg, w.deps.clock.Now())
		w.reportState()
		w.emit()
		e.mu.Unlock()

		timer := w.deps.clock.AfterFunc(w.opts.Timeout, func() { cancelAttempt(errAttemptTimeout) })
		start := w.deps.clock.Now()
		err := w.apply(attemptCtx, cfg)
		dur := w.deps.clock.Since(start)
		timer.Stop()
		cause := context.Cause(attemptCtx)
		cancelAttempt(nil)

		e.mu.Lock()
		w.releaseSlot()
		w.finish(cfg, err, cause, dur)
		w.reportState()
		w.emit()
		rec := w.takeRecord()
		e.mu.Unlock()
		w.recordApplied(rec)
	}
}

// releaseSlot gives up w's apply slot (or its place in the queue) and
// wakes the worker the slot goes to. e.mu is held.
func (w *worker) releaseSlot() {
	if next := w.pool.release(w); next != nil {
		next.wake()
	}
}

// wait blocks until a kick, d elapsed (d > 0), or the worker stops; false
// when it stopped.
func (w *worker) wait(d time.Duration) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := w.deps.clock.NewTimer(d)
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

// decide asks the machine what to do and does the bookkeeping its
// decision needs beyond the sink: a hash skip is recorded and reported, a
// closed gate registers the worker as a waiter of its stream. e.mu is held.
func (w *worker) decide(now time.Time) decision {
	e := w.e
	d := w.m.decide(now, func(gen uint64) gateVerdict { return e.gate(w, gen) })
	switch d.kind {
	case actSkip:
		w.report(applyOutcome{sink: w.name, kind: w.kind, stream: w.st.name, cfg: d.cfg, result: ResultSkipped, at: now}, d.prevApplied, false)
	case actGate:
		w.st.waiters[w] = struct{}{}
		if d.blocked {
			// Later waves wait on this sink: tell them.
			e.kickWaiters(w.st)
			w.st.waiters[w] = struct{}{}
		}
	}
	w.reportState()
	return d
}

// reportState passes the machine's state changes to the metrics. e.mu is
// held.
func (w *worker) reportState() {
	w.m.eachChange(func(c stateChange) {
		w.deps.metrics.StateChanged(w.name, w.kind, c.from, c.to)
	})
}

// apply calls the sink, turning a panic into an error.
func (w *worker) apply(ctx context.Context, cfg *config.Config) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.deps.log.Error("sink panicked", "sink", w.name, "generation", cfg.Generation, "panic", w.scrubText(fmt.Sprint(p)), "stack", string(debug.Stack()))
			err = &sink.Error{Code: sink.CodeInternal, Message: fmt.Sprintf("the sink panicked: %v", p), Err: errSinkPanicked}
		}
	}()
	return w.s.Apply(ctx, cfg)
}

// finish takes the outcome of an attempt: the machine's transition, then
// one event for status, metrics and logs. e.mu is held.
func (w *worker) finish(cfg *config.Config, err, cause error, dur time.Duration) {
	now := w.deps.clock.Now()
	w.cancelApply = nil
	w.lastDur = dur
	if w.ctx.Err() != nil {
		// Deleted, replaced or stopping: the outcome no longer matters.
		w.m.outcome(attemptOutcome{kind: outAbandoned, cfg: cfg}, now)
		return
	}
	o, f := w.classify(cfg, err, cause, w.deps.rnd)
	t := w.m.outcome(o, now)
	w.report(w.outcomeOf(o, t, f, dur, now), t.prevApplied, t.kickWaiters)
}

// report makes status, metrics and the log line from ev, and tells the
// stream when the applied generation moved from prevApplied or a rejection
// changes its gates. e.mu is held.
func (w *worker) report(ev applyOutcome, prevApplied uint64, kick bool) {
	e := w.e
	w.show(ev)
	w.reportState()
	ev.measure(w.deps.metrics)
	ev.logTo(w.deps.log)
	if prevApplied != w.m.appliedGen {
		e.appliedChanged(w, prevApplied)
	} else if kick {
		e.kickWaiters(w.st) // later waves skip it now
	}
}

// dropFailed forgets the last failed apply once a generation at least as
// new is applied: the failure is over, and keeping its config would hold
// one old config per sink for ever (internal/engine/doc.go, Memory). e.mu is held.
func (w *worker) dropFailed() {
	if w.lastFailedCfg != nil && w.lastFailedCfg.Generation <= w.m.appliedGen {
		w.lastFailedCfg, w.lastFailedErr = nil, nil
	}
}

func (w *worker) takeRecord() *store.Applied {
	r := w.record
	w.record = nil
	return r
}

// recordApplied stores what the sink applied; on failure the next apply
// records again (a record overwrites the previous one).
func (w *worker) recordApplied(a *store.Applied) {
	if a == nil || w.deps.recorder == nil {
		return
	}
	if err := w.deps.recorder.RecordApplied(w.ctx, *a); err != nil && w.ctx.Err() == nil {
		w.deps.log.Warn("recording the applied generation failed; it is recorded again after the next apply", "sink", w.name, "generation", a.Generation, "error", err)
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
	st := &confighubv1.SinkStatus{
		Sink:                w.name,
		Kind:                w.kind,
		Stream:              w.st.name,
		State:               w.m.state,
		DesiredGeneration:   w.m.desiredGen,
		DesiredHash:         w.m.desiredHash,
		AppliedGeneration:   w.m.appliedGen,
		AppliedHash:         w.m.appliedHash,
		Attempts:            w.m.attempts,
		EntityErrors:        w.entityErrors,
		EntityErrorsOmitted: w.entityErrorsOmitted,
		Coalesced:           w.m.coalesced,
		Reason:              w.m.reason,
		RejectedGeneration:  w.m.rejectedGen,
		AppliesTotal:        w.appliesTotal,
		PreviousError:       w.prevErr,
		PreviousErrorCode:   w.prevErrCode,
		ExcludedEntities:    w.m.fallback.excluded,
		FallbackGeneration:  w.m.fallback.gen,
		FallbackHash:        w.m.fallback.hash,
		DataPlane:           w.dataPlane,
	}
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

// shownError is the current failure as status shows it: unreachable (the
// Runner's health) before the last apply's error. e.mu is held.
func (w *worker) shownError() (msg, code string) {
	if w.health != "" {
		return "unreachable: " + w.health, string(sink.CodeUnreachable)
	}
	return w.applyErr, w.applyErrCode
}

// sameStatus compares two statuses built by status(); entity errors are
// compared by identity (they come from one sink.Error).
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

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// notifier is what a sink's Runner talks to. Every method takes the engine
// lock briefly and never waits for an apply.
type notifier struct{ w *worker }

var _ sink.Notifier = notifier{}

func (n notifier) Resync(reason string) {
	w := n.w
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if w.removed {
		return
	}
	// The destination is back (a gateway restarted empty, a plugin
	// reconnected): the backoff wait is no longer worth waiting out.
	// A destination's own Retry-After still holds.
	w.m.requestResync(reason)
	w.deps.log.Info("resync requested", "sink", w.name, "reason", reason)
	w.wake()
}

func (n notifier) Health(err error) {
	w := n.w
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if w.removed {
		return
	}
	h := ""
	if err != nil {
		h = err.Error()
		if h == "" {
			h = "unreachable"
		}
		h = w.scrubText(h)
	}
	if h == w.health {
		return
	}
	if h != "" {
		w.deps.log.Warn("sink unreachable", "sink", w.name, "error", h)
	} else {
		w.deps.log.Info("sink reachable again", "sink", w.name)
		// A retry scheduled while it was down is tried now, not after the
		// rest of its backoff.
		w.m.reachable()
		w.wake()
	}
	w.health = h
	w.emit()
}

func (n notifier) DataPlane(dp *confighubv1.DataPlaneStatus) {
	w := n.w
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if w.removed {
		return
	}
	w.dataPlane = dp
	w.emit()
}
