package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// outcomeMetrics records what an applyOutcome passes to the metrics.
type outcomeMetrics struct {
	NopMetrics
	calls []string
}

func (m *outcomeMetrics) ApplyDone(s, k string, r Result, reason string, d time.Duration, n int) {
	m.calls = append(m.calls, fmt.Sprintf("ApplyDone %s %s %s %q %s %d", s, k, r, reason, d, n))
}
func (m *outcomeMetrics) LastSuccess(s, k string, t time.Time) {
	m.calls = append(m.calls, fmt.Sprintf("LastSuccess %s %s", s, t.Format(time.RFC3339)))
}
func (m *outcomeMetrics) EntityErrors(s, k string, n int) {
	m.calls = append(m.calls, fmt.Sprintf("EntityErrors %s %d", s, n))
}
func (m *outcomeMetrics) ExcludedEntities(s, k string, n int) {
	m.calls = append(m.calls, fmt.Sprintf("ExcludedEntities %s %d", s, n))
}

// TestApplyOutcomeEvent: each way an attempt ends is classified once into
// the machine's outcome and one event, from which the sink's status
// fields, the metrics and the log line are made: a retryable failure's
// line names the error and the next retry, a rejection's the entity
// errors, a degraded apply's the fallback; the error text status shows
// keeps the sink's own code while the metrics and the log get the closed
// set's.
func TestApplyOutcomeEvent(t *testing.T) {
	cfg := &config.Config{Stream: "s", Generation: 2, Hash: "hash-2", Raw: []byte("0123456789")}
	ees := []*confighubv1.EntityError{{EntityType: "route", EntityName: "r"}}
	excluded := []*confighubv1.ExcludedEntity{{EntityType: "route", EntityName: "r"}}
	cases := []struct {
		name       string
		err, cause error
		result     Result
		metrics    []string
		log        []string // parts of the log line
		lastError  string
		code       string
		applied    bool // counted as an apply (applies_total, last_applied_time)
		failedKept bool // LastFailed holds cfg
	}{
		{name: "applied", result: ResultApplied, applied: true,
			metrics: []string{`ApplyDone a kong applied "" 1.5s 10`, "LastSuccess a 2026-01-01T00:00:00Z", "EntityErrors a 0", "ExcludedEntities a 0"},
			log:     []string{"level=INFO", "msg=apply", "sink=a", "stream=s", "generation=2", "duration=1.5s", "attempt=1", "result=applied"}},
		{name: "applied after the timeout: trusted", cause: errAttemptTimeout, result: ResultApplied, applied: true,
			metrics: []string{`ApplyDone a kong applied "" 1.5s 10`, "LastSuccess a 2026-01-01T00:00:00Z", "EntityErrors a 0", "ExcludedEntities a 0"},
			log:     []string{"result=applied"}},
		{name: "superseded", err: context.Canceled, cause: errSuperseded, result: ResultCancelled,
			metrics: []string{`ApplyDone a kong cancelled "superseded" 1.5s 10`},
			log:     []string{"level=INFO", "result=cancelled", `reason="superseded by a newer generation"`}},
		{name: "retryable", err: &sink.Error{Code: sink.CodeUnavailable, Message: "503", EntityErrors: ees}, result: ResultFailed, failedKept: true,
			metrics: []string{`ApplyDone a kong failed "unavailable" 1.5s 10`, "EntityErrors a 1"},
			log: []string{"level=WARN", "result=failed", "code=unavailable", `error="unavailable: 503"`, "retry_in=1s", "next_retry=2026-01-01T00:00:01.000Z",
				`note="retrying with backoff; a new configuration is tried at once"`},
			lastError: "unavailable: 503", code: "unavailable"},
		{name: "a code outside the set", err: &sink.Error{Code: "E42", Message: "plugin says no"}, result: ResultFailed, failedKept: true,
			metrics:   []string{`ApplyDone a kong failed "unavailable" 1.5s 10`, "EntityErrors a 0"},
			log:       []string{"code=unavailable", `error="unavailable: plugin says no"`},
			lastError: "E42: plugin says no", code: "unavailable"},
		{name: "plain error", err: errors.New("connection refused"), result: ResultFailed, failedKept: true,
			metrics:   []string{`ApplyDone a kong failed "unavailable" 1.5s 10`, "EntityErrors a 0"},
			lastError: "connection refused", code: "unavailable"},
		{name: "timeout", err: context.Canceled, cause: errAttemptTimeout, result: ResultFailed, failedKept: true,
			metrics:   []string{`ApplyDone a kong failed "timeout" 1.5s 10`, "EntityErrors a 0"},
			lastError: "timeout: apply timed out after 30s: context canceled", code: "timeout"},
		{name: "rejected", err: &sink.Error{Code: sink.CodeInvalid, Permanent: true, Message: "bad", EntityErrors: ees}, result: ResultRejected, failedKept: true,
			metrics: []string{`ApplyDone a kong rejected "invalid" 1.5s 10`, "EntityErrors a 1"},
			log: []string{"level=WARN", "result=rejected", "code=invalid", `error="invalid: bad"`, "entity_errors=1",
				`note="this generation is not retried; a new configuration is tried at once"`},
			lastError: "invalid: bad", code: "invalid"},
		{name: "degraded", err: &sink.Degraded{Hash: "fallback-hash", Excluded: excluded, Rejection: &sink.Error{Code: sink.CodeInvalid, Permanent: true, Message: "bad", EntityErrors: ees}},
			result: ResultDegraded, applied: true, failedKept: true,
			metrics: []string{`ApplyDone a kong degraded "rejected" 1.5s 10`, "EntityErrors a 1", "ExcludedEntities a 1"},
			log:     []string{"level=WARN", "result=degraded", "excluded=1", "fallback_hash=fallback-has", `error="invalid: bad"`},
			// The rejection's own text; the code of a degraded apply is rejected.
			lastError: "invalid: bad", code: "rejected"},
		{name: "degraded without a rejection", err: &sink.Degraded{Hash: "fb", Excluded: excluded}, result: ResultDegraded, applied: true, failedKept: true,
			metrics: []string{`ApplyDone a kong degraded "rejected" 1.5s 10`, "EntityErrors a 0", "ExcludedEntities a 1"},
			// No rejection text from the sink: last_error still says what
			// happened and what the fallback leaves out.
			lastError: "rejected: the destination rejected generation 2 and applied a fallback that excludes 1 entity", code: "rejected"},
		{name: "panic", err: &sink.Error{Code: sink.CodeInternal, Message: "the sink panicked: boom", Err: errSinkPanicked}, result: ResultFailed, failedKept: true,
			metrics:   []string{`ApplyDone a kong failed "internal" 1.5s 10`, "EntityErrors a 0"},
			lastError: "internal: the sink panicked: boom", code: "internal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			met := &outcomeMetrics{}
			e := &Engine{metrics: met, log: slog.New(slog.NewTextHandler(&buf, nil))}
			opts := mtOpt
			opts.Timeout = 30 * time.Second
			w := &worker{member: &member{name: "a", opts: opts, st: &stream{name: "s", waiters: map[*worker]struct{}{}}}, e: e, kind: "kong", m: newSlotMachine("s", opts)}
			w.health = "was down"
			w.m.offer(cfg, mt0)
			w.m.decide(mt0, func(uint64) gateVerdict { return gateOpen })
			w.m.start(cfg, mt0)

			o, f := w.classify(cfg, c.err, c.cause, func() float64 { return 0.5 })
			tr := w.m.outcome(o, mt0)
			ev := w.outcomeOf(o, tr, f, 1500*time.Millisecond, mt0)
			w.report(ev, tr.prevApplied, tr.kickWaiters)

			if ev.result != c.result || tr.result != c.result {
				t.Fatalf("result %q (machine %q), want %q", ev.result, tr.result, c.result)
			}
			if got, want := strings.Join(met.calls, "; "), strings.Join(c.metrics, "; "); got != want {
				t.Errorf("metrics\n got %s\nwant %s", got, want)
			}
			line := buf.String()
			if strings.Count(line, "\n") != 1 {
				t.Errorf("log lines: %q, want one", line)
			}
			for _, part := range c.log {
				if !strings.Contains(line, part) {
					t.Errorf("log line %q lacks %q", line, part)
				}
			}
			st := w.status()
			if w.applyErr != c.lastError || w.applyErrCode != c.code {
				t.Errorf("last error %q %q, want %q %q", w.applyErr, w.applyErrCode, c.lastError, c.code)
			}
			// The destination answered (applied, or took a fallback): its
			// Runner's "unreachable" is over.
			if (w.health == "") != c.applied {
				t.Errorf("health %q after %s", w.health, c.result)
			}
			if (st.GetAppliesTotal() == 1) != c.applied || st.GetLastAppliedTime().IsValid() != c.applied {
				t.Errorf("applies_total %d, last applied %v; counted as applied: want %v", st.GetAppliesTotal(), st.GetLastAppliedTime(), c.applied)
			}
			if (w.lastFailedCfg == cfg) != c.failedKept {
				t.Errorf("LastFailed holds the config: %v, want %v", w.lastFailedCfg == cfg, c.failedKept)
			}
			if c.result == ResultApplied && (w.record == nil || w.record.Generation != 2 || w.lastAppliedCfg != cfg || st.GetPreviousError() != "unreachable: was down") {
				t.Errorf("applied: record %v, last applied %v, previous error %q", w.record, w.lastAppliedCfg, st.GetPreviousError())
			}
		})
	}
}

// TestApplyOutcomeBoundsDegradedRejection: a degraded apply's rejection
// is bounded like any error before status shows it (doc.go: a sink's
// error is bounded).
func TestApplyOutcomeBoundsDegradedRejection(t *testing.T) {
	ees := make([]*confighubv1.EntityError, 1000)
	for i := range ees {
		ees[i] = &confighubv1.EntityError{EntityType: "route", EntityName: fmt.Sprintf("r%d", i)}
	}
	w := &worker{member: &member{name: "a"}, e: &Engine{}, m: newSlotMachine("s", mtOpt)}
	cfg := &config.Config{Stream: "s", Generation: 1}
	o, f := w.classify(cfg, &sink.Degraded{Hash: "fb", Rejection: &sink.Error{Code: sink.CodeRejected, Message: strings.Repeat("x", 1<<20), EntityErrors: ees}}, nil, nil)
	if o.kind != outDegraded || len(f.err.EntityErrors) > maxEntityErrors || int(f.omitted)+len(f.err.EntityErrors) != len(ees) || len(f.message) > maxErrorText+100 {
		t.Fatalf("kind %d: %d entity errors kept, %d omitted, message of %d bytes", o.kind, len(f.err.EntityErrors), f.omitted, len(f.message))
	}
}
