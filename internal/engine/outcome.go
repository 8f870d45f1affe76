package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// applyOutcome is one attempt's (or hash skip's) event for status, metrics and logs.
type applyOutcome struct {
	sink, kind, stream string
	cfg                *config.Config
	result             Result
	attempt            uint32        // for the generation; 0: a hash skip
	duration           time.Duration // of the call, ended at at
	at                 time.Time
	failure                          // ResultFailed, ResultRejected, ResultDegraded
	retryIn            time.Duration // ResultFailed: the backoff
	nextAttempt        time.Time
	fallback           fallbackState // ResultDegraded
}

// failure is an attempt's error as status shows it: redacted, scrubbed, bounded.
type failure struct {
	err     *sink.Error
	code    sink.Code
	message string
	omitted uint32 // entity errors left out
}

// classify turns an attempt's end into the machine's outcome and a failure.
func (w *worker) classify(cfg *config.Config, err, cause error, jitter func() float64) (attemptOutcome, *failure) {
	if err == nil { // even past its timeout
		return attemptOutcome{kind: outApplied, cfg: cfg}, nil
	}
	if d, ok := sink.AsDegraded(err); ok {
		rej := d.Rejection
		if rej == nil {
			noun := "entities"
			if len(d.Excluded) == 1 {
				noun = "entity"
			}
			rej = &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: fmt.Sprintf(
				"the destination rejected generation %d and applied a fallback that excludes %d %s", cfg.Generation, len(d.Excluded), noun)}
		}
		f := w.failure(rej)
		f.code = sink.CodeRejected
		return attemptOutcome{kind: outDegraded, cfg: cfg, fallback: fallbackState{hash: d.Hash, excluded: d.Excluded}}, f
	}
	if cause == errSuperseded {
		return attemptOutcome{kind: outSuperseded, cfg: cfg}, nil
	}
	se, ok := sink.AsError(err)
	if !ok {
		se = &sink.Error{Err: err}
	}
	if cause == errAttemptTimeout {
		se = &sink.Error{Code: sink.CodeTimeout, Message: fmt.Sprintf("apply timed out after %s: %v", w.opts.Timeout, err), Err: err, Body: se.Body, EntityErrors: se.EntityErrors}
	}
	f := w.failure(se)
	// A code of the closed set; the sink's own code stays in the text.
	f.code = sink.ParseCode(string(se.Code), se.Permanent)
	f.err.Code = f.code
	return attemptOutcome{kind: outFailed, cfg: cfg, permanent: se.Permanent, retryAfter: se.RetryAfter,
		panicked: errors.Is(err, errSinkPanicked), jitter: jitter()}, f
}

// failure cleans and bounds a copy of se for status, logs and LastFailed.
func (w *worker) failure(se *sink.Error) *failure {
	se, omitted := boundError(w.e.redactError(se, w.scrub))
	return &failure{err: se, message: se.Error(), omitted: omitted}
}

// outcomeOf is the event of an attempt the machine took as t.
func (w *worker) outcomeOf(o attemptOutcome, t transition, f *failure, dur time.Duration, now time.Time) applyOutcome {
	ev := applyOutcome{sink: w.name, kind: w.kind, stream: w.st.name, cfg: o.cfg, result: t.result, attempt: w.m.attempts,
		duration: dur, at: now, retryIn: t.retryIn, nextAttempt: w.m.nextRetry, fallback: o.fallback}
	if f != nil {
		ev.failure = *f
	}
	return ev
}

// show updates the status fields the machine does not decide. e.mu is held.
func (w *worker) show(ev applyOutcome) {
	switch ev.result {
	case ResultSkipped, ResultApplied:
		w.lastAppliedCfg = ev.cfg
		if w.lastFailedCfg != nil && w.lastFailedCfg.Generation <= w.m.appliedGen {
			w.lastFailedCfg, w.lastFailedErr = nil, nil // the failure is over
		}
		w.record = &store.Applied{Sink: w.name, Stream: w.st.name, Generation: ev.cfg.Generation, Hash: ev.cfg.Hash, Time: ev.at}
		// The failure shown becomes previous; a skip keeps a Runner's unreachable.
		msg, code := w.applyErr, w.applyErrCode
		if ev.result == ResultApplied {
			msg, code = w.shownError()
			w.lastAppliedTime = ev.at
			w.appliesTotal++
			w.health = ""
		}
		if msg != "" {
			w.prevErr, w.prevErrCode = msg, code
		}
		w.applyErr, w.applyErrCode, w.entityErrors, w.entityErrorsOmitted = "", "", nil, 0
	case ResultDegraded, ResultFailed, ResultRejected:
		if ev.result == ResultDegraded { // the destination took a fallback: applied in part
			w.lastAppliedTime = ev.at
			w.appliesTotal++
			w.health = ""
		}
		w.lastFailedCfg, w.lastFailedErr = ev.cfg, ev.err
		w.applyErr, w.applyErrCode = ev.message, string(ev.code)
		w.entityErrors, w.entityErrorsOmitted = ev.err.EntityErrors, ev.omitted
	}
}

// measure passes ev to the metrics.
func (ev applyOutcome) measure(m Metrics) {
	reason := string(ev.code)
	switch ev.result {
	case ResultSkipped:
		reason = "hash-unchanged"
	case ResultCancelled:
		reason = "superseded"
	}
	m.ApplyDone(ev.sink, ev.kind, ev.result, reason, ev.duration, ev.cfg.Size())
	switch ev.result {
	case ResultSkipped:
		m.EntityErrors(ev.sink, ev.kind, 0)
		m.ExcludedEntities(ev.sink, ev.kind, 0)
	case ResultApplied:
		m.LastSuccess(ev.sink, ev.kind, ev.at)
		m.EntityErrors(ev.sink, ev.kind, 0)
		m.ExcludedEntities(ev.sink, ev.kind, 0)
	case ResultDegraded:
		m.EntityErrors(ev.sink, ev.kind, len(ev.err.EntityErrors))
		m.ExcludedEntities(ev.sink, ev.kind, len(ev.fallback.excluded))
	case ResultFailed, ResultRejected:
		m.EntityErrors(ev.sink, ev.kind, len(ev.err.EntityErrors))
	}
}

// logTo writes ev's log line; results are constants, so not boxed.
func (ev applyOutcome) logTo(l *slog.Logger) {
	gen := ev.cfg.Generation
	if ev.result == ResultSkipped {
		l.Info("apply", "sink", ev.sink, "stream", ev.stream, "generation", gen, "result", ResultSkipped, "reason", "hash already applied", "duration", ev.duration)
		return
	}
	l = l.With("sink", ev.sink, "stream", ev.stream, "generation", gen, "duration", ev.duration, "attempt", ev.attempt)
	switch ev.result {
	case ResultApplied:
		l.Info("apply", "result", ResultApplied)
	case ResultCancelled:
		l.Info("apply", "result", ResultCancelled, "reason", "superseded by a newer generation")
	case ResultDegraded:
		l.Warn("apply", "result", ResultDegraded, "excluded", len(ev.fallback.excluded), "fallback_hash", short(ev.fallback.hash),
			"error", ev.err.Error(), "note", "the destination runs this generation without the excluded entities; a new configuration is tried whole at once")
	case ResultRejected:
		l.Warn("apply", "result", ResultRejected, "code", string(ev.code), "error", ev.err.Error(), "entity_errors", len(ev.err.EntityErrors),
			"note", "this generation is not retried; a new configuration is tried at once")
	case ResultFailed:
		l.Warn("apply", "result", ResultFailed, "code", string(ev.code), "error", ev.err.Error(), "retry_in", ev.retryIn, "next_retry", ev.nextAttempt,
			"note", "retrying with backoff; a new configuration is tried at once")
	}
}
