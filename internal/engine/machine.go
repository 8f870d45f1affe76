package engine

import (
	"fmt"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/sinkspec"
)

// slotMachine decides one sink's latest-wins slot: what to apply, when, and
// what an outcome changes; pure (no I/O, lock or clock), so table-tested.
type slotMachine struct {
	stream string // named in a reason
	opts   sinkspec.Options

	desired     *config.Config // the newest generation
	desiredAt   time.Time      // when it arrived (debounce)
	firstWaitAt time.Time      // when the oldest unattempted one arrived (max_delay)

	attemptedGen     uint64
	coalescedPending uint64 // replaced before an attempt, counted at the next decision
	resync           bool
	resyncReason     string

	applyingGen uint64 // in flight; 0: none
	lastStart   time.Time
	streak      int // consecutive failures, for the backoff exponent
	retryGen    uint64
	retryAt     time.Time
	notBefore   time.Time // Retry-After asked by the destination
	blockedGen  uint64    // skipped because a lower wave rejected it
	blockedBy   string
	panicked    bool // the last failure was a recovered panic: FAILED while retried

	state       state
	reason      string
	desiredGen  uint64
	desiredHash string
	appliedGen  uint64
	appliedHash string
	attempts    uint32
	coalesced   uint64
	rejectedGen uint64
	nextRetry   time.Time
	fallback    fallbackState // DEGRADED: the fallback the destination runs

	changes []stateChange // since eachChange
}

// fallbackState is the fallback a DEGRADED sink's destination runs.
type fallbackState struct {
	gen      uint64 // the generation it was built from; 0: none
	hash     string // the fallback's own hash
	excluded []*confighubv1.ExcludedEntity
}

type stateChange struct{ from, to state }

func newSlotMachine(streamName string, opts sinkspec.Options) slotMachine {
	return slotMachine{stream: streamName, opts: opts, state: statePending}
}

// actionKind is what the worker does after a decision.
type actionKind uint8

const (
	actIdle  actionKind = iota // nothing until woken (no config, applied or rejected)
	actSkip                    // the hash is applied already: counts as applied; decide again
	actGate                    // wait until the stream's other sinks progress
	actWait                    // wait until the decision's time, or a wake-up
	actApply                   // apply cfg (once an apply slot is free)
)

// decision is the result of decide.
type decision struct {
	kind        actionKind
	cfg         *config.Config // to apply (actApply) or found applied (actSkip)
	until       time.Time      // actWait
	prevApplied uint64         // the applied generation before a hash skip
	blocked     bool           // a lower wave's rejection newly closed the gate
}

// gateVerdict: may a sink apply a generation now; if not, skip (skipBy the rejecter) or wait.
type gateVerdict struct {
	open           bool
	skipBy, reason string
}

var gateOpen = gateVerdict{open: true}

// setState sets the state and reason, noting a change for the metrics.
func (m *slotMachine) setState(s state, reason string) {
	if s != m.state {
		m.changes = append(m.changes, stateChange{m.state, s})
	}
	m.state, m.reason = s, reason
}

// eachChange passes each state change since the last call to f.
func (m *slotMachine) eachChange(f func(stateChange)) {
	for _, c := range m.changes {
		f(c)
	}
	m.changes = m.changes[:0]
}

// seed sets what a restarted or taken-over sink is known to have applied.
func (m *slotMachine) seed(gen uint64, hash string) {
	m.appliedGen, m.appliedHash = gen, hash
}

// offer puts cfg in the slot: was an unattempted one replaced, is the apply in flight cancelled.
func (m *slotMachine) offer(cfg *config.Config, now time.Time) (coalesced, cancelInFlight bool) {
	if old := m.desired; old != nil && old.Generation > m.attemptedGen && old.Generation > m.appliedGen && old.Generation != m.blockedGen {
		m.coalescedPending++
		coalesced = true
	}
	m.desired = cfg
	m.desiredAt = now
	if m.firstWaitAt.IsZero() {
		m.firstWaitAt = now
	}
	return coalesced, m.applyingGen != 0 && m.applyingGen < cfg.Generation && m.opts.CancelInFlight
}

// requestResync forces the next apply and ends a backoff wait (not Retry-After).
func (m *slotMachine) requestResync(reason string) {
	m.resync = true
	m.resyncReason = reason
	m.retryGen, m.retryAt = 0, time.Time{}
}

// reachable ends a backoff wait: the destination is back.
func (m *slotMachine) reachable() {
	m.retryGen, m.retryAt = 0, time.Time{}
}

// decide says what to do at now; gate is asked only before an apply.
func (m *slotMachine) decide(now time.Time, gate func(gen uint64) gateVerdict) decision {
	if m.coalescedPending > 0 {
		m.coalesced += m.coalescedPending
		m.coalescedPending = 0
	}
	cfg := m.desired
	if cfg == nil {
		m.setState(stateWaiting, fmt.Sprintf("no configuration pushed to stream %q yet", m.stream))
		return decision{kind: actIdle}
	}
	if cfg.Generation != m.desiredGen {
		m.desiredGen, m.desiredHash = cfg.Generation, cfg.Hash
		m.attempts = 0
	}
	// Rejected or degraded until a newer generation (a fallback: or a resync).
	if cfg.Generation == m.rejectedGen && !(m.fallback.gen == cfg.Generation && m.resync) {
		m.setRejectedState()
		return decision{kind: actIdle}
	}
	if !m.resync {
		if cfg.Generation == m.appliedGen {
			if m.state != stateSkipped {
				m.setState(stateApplied, "")
			}
			return decision{kind: actIdle}
		}
		if m.appliedHash != "" && cfg.Hash == m.appliedHash {
			prev := m.appliedGen
			m.appliedGen = cfg.Generation
			m.fallback = fallbackState{}
			m.firstWaitAt = time.Time{}
			m.retryGen, m.nextRetry = 0, time.Time{}
			m.setState(stateSkipped, fmt.Sprintf("hash %s already applied (generation %d)", short(cfg.Hash), prev))
			return decision{kind: actSkip, cfg: cfg, prevApplied: prev}
		}
	}
	if v := gate(cfg.Generation); !v.open {
		d := decision{kind: actGate}
		if v.skipBy != "" {
			if m.blockedGen != cfg.Generation {
				m.blockedGen, m.blockedBy = cfg.Generation, v.skipBy
				d.blocked = true
			}
			m.setState(stateSkipped, v.reason)
		} else {
			m.setState(stateWaiting, v.reason)
		}
		return d
	}
	if m.retryGen == cfg.Generation && now.Before(m.retryAt) {
		m.setState(m.retryState(), "")
		return decision{kind: actWait, until: m.retryAt}
	}
	if now.Before(m.notBefore) {
		m.nextRetry = m.notBefore
		m.setState(stateBackoff, "the destination asked to wait (Retry-After)")
		return decision{kind: actWait, until: m.notBefore}
	}
	if m.opts.MinInterval > 0 && !m.lastStart.IsZero() {
		if next := m.lastStart.Add(m.opts.MinInterval); now.Before(next) {
			m.setState(stateWaiting, fmt.Sprintf("min_interval %s: next apply at %s", m.opts.MinInterval, next.UTC().Format(time.RFC3339Nano)))
			return decision{kind: actWait, until: next}
		}
	}
	if m.opts.Debounce > 0 && !m.desiredAt.IsZero() {
		due := m.desiredAt.Add(m.opts.Debounce)
		if m.opts.MaxDelay > 0 && !m.firstWaitAt.IsZero() {
			if latest := m.firstWaitAt.Add(m.opts.MaxDelay); latest.Before(due) {
				due = latest
			}
		}
		if now.Before(due) {
			m.setState(stateWaiting, fmt.Sprintf("debounce %s: applying at %s unless a newer generation arrives", m.opts.Debounce, due.UTC().Format(time.RFC3339Nano)))
			return decision{kind: actWait, until: due}
		}
	}
	return decision{kind: actApply, cfg: cfg}
}

// queued shows that the sink waits for an apply slot of pool (PENDING).
func (m *slotMachine) queued(pool string, maxApplies, waiting int) {
	m.setState(statePending, fmt.Sprintf("waiting for a free apply slot (max %d concurrent applies of %s sinks, %d waiting)", maxApplies, pool, waiting))
}

// start marks cfg as in flight from now.
func (m *slotMachine) start(cfg *config.Config, now time.Time) {
	m.attempts++
	m.attemptedGen = cfg.Generation
	m.applyingGen = cfg.Generation
	m.lastStart = now
	m.firstWaitAt = time.Time{}
	m.resync = false
	m.nextRetry = time.Time{}
	reason := ""
	if m.resyncReason != "" {
		reason = "resync: " + m.resyncReason
		m.resyncReason = ""
	}
	m.setState(stateApplying, reason)
}

// outcomeKind is how an attempt ended, as the machine sees it.
type outcomeKind uint8

const (
	outAbandoned  outcomeKind = iota // the worker stops: the outcome no longer matters
	outApplied                       // the sink applied the generation
	outDegraded                      // rejected; the destination runs a fallback (sink.Degraded)
	outSuperseded                    // a newer generation cancelled the attempt
	outFailed                        // an error; retryable unless permanent
)

// attemptOutcome is what the worker tells the machine of an attempt.
type attemptOutcome struct {
	kind       outcomeKind
	cfg        *config.Config
	permanent  bool          // outFailed: not retried (rejected)
	retryAfter time.Duration // outFailed
	panicked   bool          // outFailed
	fallback   fallbackState // outDegraded
	jitter     float64       // in [0,1), for the backoff
}

// transition is what an outcome changed, for the worker to report.
type transition struct {
	result      Result
	prevApplied uint64        // the applied generation before
	retryIn     time.Duration // the backoff of a retryable failure
	kickWaiters bool          // rejected: gated sinks look again
}

// outcome applies the outcome of the attempt in flight at now.
func (m *slotMachine) outcome(o attemptOutcome, now time.Time) transition {
	m.applyingGen = 0
	t := transition{prevApplied: m.appliedGen}
	gen := o.cfg.Generation
	switch o.kind {
	case outAbandoned:
		return t
	case outApplied:
		m.appliedGen, m.appliedHash = gen, o.cfg.Hash
		m.streak, m.retryGen, m.nextRetry = 0, 0, time.Time{}
		m.fallback = fallbackState{}
		m.setState(stateApplied, "")
		t.result = ResultApplied
	case outDegraded: // rejected; applied_hash is the fallback's: no later generation is skipped
		m.fallback = o.fallback
		m.fallback.gen = gen
		m.rejectedGen = gen
		m.appliedHash = o.fallback.hash
		m.streak, m.retryGen, m.nextRetry = 0, 0, time.Time{}
		m.panicked = false
		m.setRejectedState()
		t.result, t.kickWaiters = ResultDegraded, true
	case outSuperseded:
		m.setState(statePending, fmt.Sprintf("apply of generation %d cancelled: a newer generation arrived", gen))
		t.result = ResultCancelled
	case outFailed:
		m.panicked = o.panicked
		if o.permanent {
			m.rejectedGen = gen
			m.streak, m.retryGen, m.nextRetry = 0, 0, time.Time{}
			m.setState(stateFailed, "")
			t.result, t.kickWaiters = ResultRejected, true
			return t
		}
		m.streak++
		d := m.opts.Backoff.Delay(m.streak, o.jitter)
		if o.retryAfter > 0 {
			m.notBefore = now.Add(o.retryAfter)
			d = max(d, o.retryAfter)
		}
		m.retryGen, m.retryAt = gen, now.Add(d)
		m.nextRetry = m.retryAt
		m.setState(m.retryState(), "")
		t.result, t.retryIn = ResultFailed, d
	}
	return t
}

// retryState is BACKOFF, or FAILED after a panic (the sink is broken).
func (m *slotMachine) retryState() state {
	if m.panicked {
		return stateFailed
	}
	return stateBackoff
}

// setRejectedState is DEGRADED when a fallback runs, else FAILED.
func (m *slotMachine) setRejectedState() {
	if m.fallback.gen != 0 && m.fallback.gen == m.rejectedGen {
		m.setState(stateDegraded, fmt.Sprintf("running a fallback of generation %d without %d entities (hash %s)",
			m.fallback.gen, len(m.fallback.excluded), short(m.fallback.hash)))
		return
	}
	m.setState(stateFailed, "")
}

// refusal names the sink whose rejection made this one refuse gen, if any.
func (m *slotMachine) refusal(self string, gen uint64) string {
	if m.rejectedGen == gen {
		return self
	}
	if m.blockedGen == gen && m.desiredGen == gen {
		return m.blockedBy
	}
	return ""
}
