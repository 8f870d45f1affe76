package engine

import (
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
// its slot, plus the sink's Runner goroutine if it has one. Every field
// below "under e.mu" is guarded by the engine's lock; the goroutine never
// holds the lock while calling the sink.
type worker struct {
	e    *Engine
	name string
	kind string
	spec *confighubv1.Sink
	opts sinkspec.Options
	s    sink.Sink
	caps sink.Capabilities
	st   *stream
	// pool is the apply-slot pool of the sink: gateways' or the others'.
	pool *slotPool
	// scrub replaces the spec's secrets in error texts; nil when none.
	scrub *strings.Replacer

	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	done   chan struct{}

	// under e.mu: the slot and scheduling.
	desired   *config.Config // the newest generation (the slot)
	desiredAt time.Time      // when it arrived (debounce)
	// firstWaitAt is when the oldest generation not yet attempted arrived
	// (max_delay); zero when none waits.
	firstWaitAt      time.Time
	attemptedGen     uint64
	coalescedPending uint64
	resync           bool
	resyncReason     string
	applyingGen      uint64
	cancelApply      context.CancelCauseFunc
	lastStart        time.Time
	streak           int // consecutive failures, for the backoff exponent
	retryGen         uint64
	retryAt          time.Time
	notBefore        time.Time // Retry-After asked by the destination
	blockedGen       uint64    // generation skipped because a lower wave rejected it
	blockedBy        string
	health           string
	removed          bool
	slotHeld         bool           // holds a slot of pool
	slotQueued       bool           // waits in pool's queue
	record           *store.Applied // to be recorded by the goroutine
	lastAppliedCfg   *config.Config
	lastFailedCfg    *config.Config
	lastFailedErr    *sink.Error

	// under e.mu: the status fields.
	state        state
	desiredGen   uint64
	desiredHash  string
	appliedGen   uint64
	appliedHash  string
	attempts     uint32
	applyErr     string
	applyErrCode string
	panicked     bool // the last failure was a recovered panic: FAILED while retried
	entityErrors []*confighubv1.EntityError
	// entityErrorsOmitted: entity errors beyond those kept (boundError).
	entityErrorsOmitted uint32
	nextRetry           time.Time
	lastDur             time.Duration
	coalesced           uint64
	reason              string
	lastAppliedTime     time.Time
	rejectedGen         uint64
	appliesTotal        uint64
	prevErr             string // the error the last successful apply cleared
	prevErrCode         string
	published           *confighubv1.SinkStatus
	fallback            fallbackState // DEGRADED: the fallback the destination runs
}

// newWorker builds the worker of s; caps is s.Describe(), asked before
// e.mu was taken. e.mu is held.
func newWorker(e *Engine, spec *confighubv1.Sink, opts sinkspec.Options, s sink.Sink, caps sink.Capabilities) *worker {
	ctx, cancel := context.WithCancel(e.ctx)
	pool := e.slots
	if caps.Gateway {
		pool = e.gatewaySlots
	}
	return &worker{
		scrub:  e.scrubber(spec),
		pool:   pool,
		e:      e,
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
		done:   make(chan struct{}),
		state:  statePending,
	}
}

// scrubText replaces the sink's secrets in s.
func (w *worker) scrubText(s string) string {
	if w.scrub == nil {
		return s
	}
	return w.scrub.Replace(s)
}

// wake signals the goroutine to look at its slot again; never blocks.
func (w *worker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// offer puts a new generation in the slot (latest wins). e.mu is held.
func (w *worker) offer(cfg *config.Config, now time.Time) {
	if old := w.desired; old != nil && old.Generation > w.attemptedGen && old.Generation > w.appliedGen && old.Generation != w.blockedGen {
		w.coalescedPending++
		w.e.metrics.Coalesced(w.name, w.kind)
	}
	w.desired = cfg
	w.desiredAt = now
	if w.firstWaitAt.IsZero() {
		w.firstWaitAt = now
	}
	if w.applyingGen != 0 && w.applyingGen < cfg.Generation && w.opts.CancelInFlight && w.cancelApply != nil {
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

// start runs the worker's goroutines and closes done when both ended.
func (w *worker) start() {
	defer w.e.wg.Done()
	defer close(w.done)
	var wg sync.WaitGroup
	if r, ok := w.s.(sink.Runner); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runRunner(r)
		}()
	}
	w.loop()
	wg.Wait()
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

// action is what the worker does next.
type action struct {
	apply *config.Config
	// wait > 0: wake up after it (or on a kick); 0 with apply == nil: wait
	// for a kick.
	wait time.Duration
	// again: decide once more right away (after recording).
	again bool
}

func (w *worker) loop() {
	e := w.e
	defer func() {
		// Hand a held slot on (or leave the queue) whatever the exit.
		e.mu.Lock()
		w.pool.release(w)
		e.mu.Unlock()
	}()
	for {
		if w.ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		act := w.decide(e.clock.Now())
		if act.apply != nil && !w.pool.acquire(w) {
			// Queued: PENDING once, then sleep until a release hands
			// this worker the slot (or a Resync, Health or stop wakes
			// it), and decide again.
			w.setState(statePending, fmt.Sprintf("waiting for a free apply slot (max %d concurrent applies of %s sinks, %d waiting)", w.pool.max, w.pool.name, w.pool.waiting()))
			w.emit()
			rec := w.takeRecord()
			e.mu.Unlock()
			w.recordApplied(rec)
			if !w.wait(0) {
				return
			}
			continue
		}
		if act.apply == nil {
			w.pool.release(w)
			w.emit()
			rec := w.takeRecord()
			e.mu.Unlock()
			w.recordApplied(rec)
			if !act.again && !w.wait(act.wait) {
				return
			}
			continue
		}
		cfg := act.apply
		attemptCtx, cancelAttempt := context.WithCancelCause(w.ctx)
		w.startAttempt(cfg, cancelAttempt)
		w.emit()
		e.mu.Unlock()

		timer := e.clock.AfterFunc(w.opts.Timeout, func() { cancelAttempt(errAttemptTimeout) })
		start := e.clock.Now()
		err := w.apply(attemptCtx, cfg)
		dur := e.clock.Since(start)
		timer.Stop()
		cause := context.Cause(attemptCtx)
		cancelAttempt(nil)

		e.mu.Lock()
		w.pool.release(w)
		w.finish(cfg, err, cause, dur)
		w.emit()
		rec := w.takeRecord()
		e.mu.Unlock()
		w.recordApplied(rec)
	}
}

// wait blocks until a kick, d elapsed (d > 0), or the worker stops; false
// when it stopped.
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

// decide looks at the slot and says what to do. e.mu is held.
func (w *worker) decide(now time.Time) action {
	if w.coalescedPending > 0 {
		w.coalesced += w.coalescedPending
		w.coalescedPending = 0
	}
	cfg := w.desired
	if cfg == nil {
		w.setState(stateWaiting, fmt.Sprintf("no configuration pushed to stream %q yet", w.st.name))
		return action{}
	}
	if cfg.Generation != w.desiredGen {
		w.desiredGen, w.desiredHash = cfg.Generation, cfg.Hash
		w.attempts = 0
	}
	// A rejected generation stays FAILED until a newer one arrives.
	// A degraded one too (it runs a fallback), unless a resync asks to
	// send that fallback again.
	if cfg.Generation == w.rejectedGen && !(w.fallback.gen == cfg.Generation && w.resync) {
		w.setRejectedState()
		return action{}
	}
	if !w.resync {
		if cfg.Generation == w.appliedGen {
			if w.state != stateSkipped {
				w.setState(stateApplied, "")
			}
			return action{}
		}
		if w.appliedHash != "" && cfg.Hash == w.appliedHash {
			prev := w.appliedGen
			w.appliedGen = cfg.Generation
			w.lastAppliedCfg = cfg
			w.dropFailed()
			w.fallback = fallbackState{}
			w.firstWaitAt = time.Time{}
			w.retryGen, w.nextRetry = 0, time.Time{}
			w.setState(stateSkipped, fmt.Sprintf("hash %s already applied (generation %d)", short(cfg.Hash), prev))
			w.record = &store.Applied{Sink: w.name, Stream: w.st.name, Generation: cfg.Generation, Hash: cfg.Hash, Time: now}
			w.e.metrics.ApplyDone(w.name, w.kind, ResultSkipped, "hash-unchanged", 0, cfg.Size())
			w.e.log.Info("apply", "sink", w.name, "stream", w.st.name, "generation", cfg.Generation, "result", ResultSkipped, "reason", "hash already applied", "duration", time.Duration(0))
			w.e.appliedChanged(w, prev)
			return action{again: true}
		}
	}
	if open, skipBy, reason := w.e.gate(w, cfg.Generation); !open {
		w.st.waiters[w] = struct{}{}
		if skipBy != "" {
			if w.blockedGen != cfg.Generation {
				w.blockedGen, w.blockedBy = cfg.Generation, skipBy
				// Later waves wait on this sink: tell them.
				w.e.kickWaiters(w.st)
				w.st.waiters[w] = struct{}{}
			}
			w.setState(stateSkipped, reason)
		} else {
			w.setState(stateWaiting, reason)
		}
		return action{}
	}
	if w.retryGen == cfg.Generation && now.Before(w.retryAt) {
		w.setState(w.retryState(), "")
		return action{wait: w.retryAt.Sub(now)}
	}
	if now.Before(w.notBefore) {
		w.nextRetry = w.notBefore
		w.setState(stateBackoff, "the destination asked to wait (Retry-After)")
		return action{wait: w.notBefore.Sub(now)}
	}
	if w.opts.MinInterval > 0 && !w.lastStart.IsZero() {
		if next := w.lastStart.Add(w.opts.MinInterval); now.Before(next) {
			w.setState(stateWaiting, fmt.Sprintf("min_interval %s: next apply at %s", w.opts.MinInterval, next.UTC().Format(time.RFC3339Nano)))
			return action{wait: next.Sub(now)}
		}
	}
	if w.opts.Debounce > 0 && !w.desiredAt.IsZero() {
		due := w.desiredAt.Add(w.opts.Debounce)
		if w.opts.MaxDelay > 0 && !w.firstWaitAt.IsZero() {
			if latest := w.firstWaitAt.Add(w.opts.MaxDelay); latest.Before(due) {
				due = latest
			}
		}
		if now.Before(due) {
			w.setState(stateWaiting, fmt.Sprintf("debounce %s: applying at %s unless a newer generation arrives", w.opts.Debounce, due.UTC().Format(time.RFC3339Nano)))
			return action{wait: due.Sub(now)}
		}
	}
	return action{apply: cfg}
}

// startAttempt marks cfg as in flight. e.mu is held.
func (w *worker) startAttempt(cfg *config.Config, cancel context.CancelCauseFunc) {
	now := w.e.clock.Now()
	w.attempts++
	w.attemptedGen = cfg.Generation
	w.applyingGen = cfg.Generation
	w.cancelApply = cancel
	w.lastStart = now
	w.firstWaitAt = time.Time{}
	w.resync = false
	w.nextRetry = time.Time{}
	reason := ""
	if w.resyncReason != "" {
		reason = "resync: " + w.resyncReason
		w.resyncReason = ""
	}
	w.setState(stateApplying, reason)
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

// finish records the outcome of an attempt. e.mu is held.
func (w *worker) finish(cfg *config.Config, err, cause error, dur time.Duration) {
	e := w.e
	now := e.clock.Now()
	w.applyingGen, w.cancelApply = 0, nil
	w.lastDur = dur
	log := e.log.With("sink", w.name, "stream", w.st.name, "generation", cfg.Generation, "duration", dur, "attempt", w.attempts)
	if w.ctx.Err() != nil {
		// Deleted, replaced or stopping: the outcome no longer matters.
		return
	}
	if err == nil && cause == errAttemptTimeout {
		// The sink ignored the timeout but claims success: trust it.
		cause = nil
	}
	if err == nil {
		prev := w.appliedGen
		w.appliedGen, w.appliedHash = cfg.Generation, cfg.Hash
		w.lastAppliedCfg = cfg
		w.dropFailed()
		w.lastAppliedTime = now
		w.appliesTotal++
		w.streak, w.retryGen, w.nextRetry = 0, 0, time.Time{}
		// The destination just answered: whatever was shown as the
		// current failure (an apply error, or unreachable from the
		// Runner's last check) is over; status keeps it as previous.
		if msg, code := w.shownError(); msg != "" {
			w.prevErr, w.prevErrCode = msg, code
		}
		w.applyErr, w.applyErrCode, w.entityErrors, w.entityErrorsOmitted = "", "", nil, 0
		w.fallback = fallbackState{}
		w.health = ""
		w.setState(stateApplied, "")
		w.record = &store.Applied{Sink: w.name, Stream: w.st.name, Generation: cfg.Generation, Hash: cfg.Hash, Time: now}
		e.metrics.ApplyDone(w.name, w.kind, ResultApplied, "", dur, cfg.Size())
		e.metrics.LastSuccess(w.name, w.kind, now)
		e.metrics.EntityErrors(w.name, w.kind, 0)
		e.metrics.ExcludedEntities(w.name, w.kind, 0)
		log.Info("apply", "result", ResultApplied)
		if prev != w.appliedGen {
			e.appliedChanged(w, prev)
		}
		return
	}
	if d, ok := sink.AsDegraded(err); ok {
		w.degraded(cfg, d, dur, log)
		return
	}
	if cause == errSuperseded {
		w.setState(statePending, fmt.Sprintf("apply of generation %d cancelled: a newer generation arrived", cfg.Generation))
		e.metrics.ApplyDone(w.name, w.kind, ResultCancelled, "superseded", dur, cfg.Size())
		log.Info("apply", "result", ResultCancelled, "reason", "superseded by a newer generation")
		return
	}
	se, ok := sink.AsError(err)
	if !ok {
		se = &sink.Error{Err: err}
	}
	if cause == errAttemptTimeout {
		se = &sink.Error{Code: sink.CodeTimeout, Message: fmt.Sprintf("apply timed out after %s: %v", w.opts.Timeout, err), Err: err, Body: se.Body, EntityErrors: se.EntityErrors}
	}
	se = e.redactError(se, w.scrub)
	var omitted uint32
	se, omitted = boundError(se)
	// Status reports a code of the closed set whatever the sink (a user's
	// in-process one included) set; the sink's own code stays in the text.
	msg := se.Error()
	mapped := *se
	mapped.Code = sink.ParseCode(string(se.Code), se.Permanent)
	se = &mapped
	code := string(se.Code)
	w.lastFailedCfg, w.lastFailedErr = cfg, se
	w.applyErr, w.applyErrCode, w.entityErrors, w.entityErrorsOmitted = msg, code, se.EntityErrors, omitted
	w.panicked = errors.Is(err, errSinkPanicked)
	e.metrics.EntityErrors(w.name, w.kind, len(se.EntityErrors))
	if se.Permanent {
		w.rejectedGen = cfg.Generation
		w.streak, w.retryGen, w.nextRetry = 0, 0, time.Time{}
		w.setState(stateFailed, "")
		e.metrics.ApplyDone(w.name, w.kind, ResultRejected, code, dur, cfg.Size())
		log.Warn("apply", "result", ResultRejected, "code", code, "error", se.Error(), "entity_errors", len(se.EntityErrors),
			"note", "this generation is not retried; a new configuration is tried at once")
		e.kickWaiters(w.st) // later waves skip it now
		return
	}
	w.streak++
	d := w.opts.Backoff.Delay(w.streak, e.rnd())
	if se.RetryAfter > 0 {
		w.notBefore = now.Add(se.RetryAfter)
		d = max(d, se.RetryAfter)
	}
	w.retryGen, w.retryAt = cfg.Generation, now.Add(d)
	w.nextRetry = w.retryAt
	w.setState(w.retryState(), "")
	e.metrics.ApplyDone(w.name, w.kind, ResultFailed, code, dur, cfg.Size())
	log.Warn("apply", "result", ResultFailed, "code", code, "error", se.Error(), "retry_in", d, "next_retry", w.retryAt,
		"note", "retrying with backoff; a new configuration is tried at once")
}

// dropFailed forgets the last failed apply once a generation at least as
// new is applied: the failure is over, and keeping its config would hold
// one old config per sink for ever (internal/engine/doc.go, Memory). e.mu is held.
func (w *worker) dropFailed() {
	if w.lastFailedCfg != nil && w.lastFailedCfg.Generation <= w.appliedGen {
		w.lastFailedCfg, w.lastFailedErr = nil, nil
	}
}

// retryState is the state while waiting to retry: BACKOFF, or FAILED after
// a panic (the sink is broken, not the destination busy), retried all the
// same.
func (w *worker) retryState() state {
	if w.panicked {
		return stateFailed
	}
	return stateBackoff
}

func (w *worker) takeRecord() *store.Applied {
	r := w.record
	w.record = nil
	return r
}

// recordApplied stores what the sink applied; on failure the next apply
// records again (a record overwrites the previous one).
func (w *worker) recordApplied(a *store.Applied) {
	if a == nil || w.e.recorder == nil {
		return
	}
	if err := w.e.recorder.RecordApplied(w.ctx, *a); err != nil && w.ctx.Err() == nil {
		w.e.log.Warn("recording the applied generation failed; it is recorded again after the next apply", "sink", w.name, "generation", a.Generation, "error", err)
	}
}

// setState sets the state and reason. e.mu is held.
func (w *worker) setState(s state, reason string) {
	if s != w.state {
		w.e.metrics.StateChanged(w.name, w.kind, w.state, s)
	}
	w.state, w.reason = s, reason
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
		State:               w.state,
		DesiredGeneration:   w.desiredGen,
		DesiredHash:         w.desiredHash,
		AppliedGeneration:   w.appliedGen,
		AppliedHash:         w.appliedHash,
		Attempts:            w.attempts,
		EntityErrors:        w.entityErrors,
		EntityErrorsOmitted: w.entityErrorsOmitted,
		Coalesced:           w.coalesced,
		Reason:              w.reason,
		RejectedGeneration:  w.rejectedGen,
		AppliesTotal:        w.appliesTotal,
		PreviousError:       w.prevErr,
		PreviousErrorCode:   w.prevErrCode,
		ExcludedEntities:    w.fallback.excluded,
		FallbackGeneration:  w.fallback.gen,
		FallbackHash:        w.fallback.hash,
	}
	st.LastError, st.LastErrorCode = w.shownError()
	if !w.nextRetry.IsZero() {
		st.NextRetryTime = timestamppb.New(w.nextRetry)
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
		a.FallbackHash != b.FallbackHash || len(a.ExcludedEntities) != len(b.ExcludedEntities) {
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
	w.resync = true
	w.resyncReason = reason
	// The destination is back (a gateway restarted empty, a plugin
	// reconnected): the backoff wait is no longer worth waiting out.
	// A destination's own Retry-After still holds.
	w.retryGen, w.retryAt = 0, time.Time{}
	w.e.log.Info("resync requested", "sink", w.name, "reason", reason)
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
		w.e.log.Warn("sink unreachable", "sink", w.name, "error", h)
	} else {
		w.e.log.Info("sink reachable again", "sink", w.name)
		// A retry scheduled while it was down is tried now, not after the
		// rest of its backoff.
		w.retryGen, w.retryAt = 0, time.Time{}
		w.wake()
	}
	w.health = h
	w.emit()
}
