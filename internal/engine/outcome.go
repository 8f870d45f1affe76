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

// applyOutcome is what one apply attempt (or hash skip) came to: the one
// event status (show), the metrics (measure) and the log line (logTo) are
// made from.
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

// failure is an attempt's error as status shows it: redacted, scrubbed of
// the sink's secrets, bounded (omitted counts the entity errors left out),
// its code of the closed set; message keeps the sink's own code.
type failure struct {
	err     *sink.Error
	code    sink.Code
	message string
	omitted uint32
}

// classify turns the end of an attempt into what the machine needs to
// know of it and, for an error, the failure status shows.
func (w *worker) classify(cfg *config.Config, err, cause error, jitter func() float64) (attemptOutcome, *failure) {
	if err == nil && cause == errAttemptTimeout {
		// The sink ignored the timeout but claims success: trust it.
		cause = nil
	}
	if err == nil {
		return attemptOutcome{kind: outApplied, cfg: cfg}, nil
	}
	if d, ok := sink.AsDegraded(err); ok {
		rej := d.Rejection
		if rej == nil {
			// The sink did not say why: say what happened, so an operator
			// reading last_error knows the destination runs a fallback.
			rej = &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: fallbackMessage(cfg.Generation, len(d.Excluded))}
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
	// Status reports a code of the closed set whatever the sink (a user's
	// in-process one included) set; the sink's own code stays in the text.
	f.code = sink.ParseCode(string(se.Code), se.Permanent)
	f.err.Code = f.code
	return attemptOutcome{kind: outFailed, cfg: cfg, permanent: se.Permanent, retryAfter: se.RetryAfter,
		panicked: errors.Is(err, errSinkPanicked), jitter: jitter()}, f
}

// fallbackMessage is the error text of a degraded apply whose sink gave no
// rejection of its own.
func fallbackMessage(generation uint64, excluded int) string {
	noun := "entities"
	if excluded == 1 {
		noun = "entity"
	}
	return fmt.Sprintf("the destination rejected generation %d and applied a fallback that excludes %d %s", generation, excluded, noun)
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

// show updates the status fields the machine does not decide. e.mu is
// held.
func (w *worker) show(ev applyOutcome) {
	switch ev.result {
	case ResultSkipped, ResultApplied:
		w.lastAppliedCfg = ev.cfg
		w.dropFailed()
		w.record = &store.Applied{Sink: w.name, Stream: w.st.name, Generation: ev.cfg.Generation, Hash: ev.cfg.Hash, Time: ev.at}
		// The failure shown is over; status keeps it as previous. A skip
		// sent nothing, so a Runner's "unreachable" stays.
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

// logTo writes ev's log line. The result is given as a constant: a
// variable would be boxed on every apply.
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
