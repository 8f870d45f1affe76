package engine

import (
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/sinkspec"
)

var (
	mt0   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gen1  = &config.Config{Stream: "s", Generation: 1, Hash: "hash-1"}
	gen2  = &config.Config{Stream: "s", Generation: 2, Hash: "hash-2"}
	gen3  = &config.Config{Stream: "s", Generation: 3, Hash: "hash-1"} // gen1's content again
	mtOpt = sinkspec.Options{Backoff: sinkspec.Backoff{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2, Jitter: 0.2}}
)

// machineWith returns a machine holding cfg, offered at mt0.
func machineWith(opts sinkspec.Options, cfg *config.Config) *slotMachine {
	m := newSlotMachine("s", opts)
	if cfg != nil {
		m.offer(cfg, mt0)
	}
	return &m
}

// TestSlotMachineDecide covers every branch of decide: what the slot
// does next, the state and reason it shows, and whether the gate was
// asked (only when the generation would otherwise be applied).
func TestSlotMachineDecide(t *testing.T) {
	wait := gateVerdict{reason: "gated: waiting"}
	skip := gateVerdict{skipBy: "gw-0", reason: "rejected by gw-0"}
	cases := []struct {
		name   string
		opts   sinkspec.Options
		cfg    *config.Config
		setup  func(m *slotMachine)
		now    time.Time
		gate   gateVerdict
		kind   actionKind
		until  time.Time
		state  state
		reason string // a part of it; "" wants none
		asked  bool   // the gate was asked
		check  func(t *testing.T, m *slotMachine, d decision)
	}{
		{name: "no configuration", kind: actIdle, state: stateWaiting, reason: `no configuration pushed to stream "s" yet`},
		{name: "newest generation applies", cfg: gen1, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			check: func(t *testing.T, m *slotMachine, d decision) {
				if d.cfg != gen1 || m.desiredGen != 1 || m.desiredHash != "hash-1" {
					t.Errorf("cfg %v, desired %d %q", d.cfg, m.desiredGen, m.desiredHash)
				}
			}},
		{name: "a new generation resets the attempts", cfg: gen2, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.desiredGen, m.attempts = 1, 4 },
			check: func(t *testing.T, m *slotMachine, _ decision) {
				if m.attempts != 0 {
					t.Errorf("attempts %d, want 0", m.attempts)
				}
			}},
		{name: "the same generation keeps its attempts", cfg: gen2, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.desiredGen, m.attempts = 2, 4 },
			check: func(t *testing.T, m *slotMachine, _ decision) {
				if m.attempts != 4 {
					t.Errorf("attempts %d, want 4", m.attempts)
				}
			}},
		{name: "coalesced generations are counted at the decision", cfg: gen1, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.offer(gen2, mt0) },
			check: func(t *testing.T, m *slotMachine, d decision) {
				if m.coalesced != 1 || m.coalescedPending != 0 || d.cfg != gen2 {
					t.Errorf("coalesced %d pending %d cfg %v", m.coalesced, m.coalescedPending, d.cfg)
				}
			}},
		{name: "a rejected generation stays failed", cfg: gen1, kind: actIdle, state: stateFailed,
			setup: func(m *slotMachine) { m.rejectedGen = 1 }},
		{name: "a rejected generation is not applied on resync", cfg: gen1, kind: actIdle, state: stateFailed,
			setup: func(m *slotMachine) { m.rejectedGen = 1; m.resync = true }},
		{name: "a degraded generation stays degraded", cfg: gen1, kind: actIdle, state: stateDegraded, reason: "running a fallback of generation 1 without 0 entities (hash fb)",
			setup: func(m *slotMachine) { m.rejectedGen = 1; m.fallback = fallbackState{gen: 1, hash: "fb"} }},
		{name: "a resync sends a degraded generation's fallback again", cfg: gen1, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) {
				m.rejectedGen = 1
				m.fallback = fallbackState{gen: 1, hash: "fb"}
				m.resync = true
			}},
		{name: "an applied generation is idle", cfg: gen1, kind: actIdle, state: stateApplied,
			setup: func(m *slotMachine) { m.seed(1, "hash-1") }},
		{name: "an applied generation found by hash stays skipped", cfg: gen1, kind: actIdle, state: stateSkipped,
			setup: func(m *slotMachine) { m.seed(1, "hash-1"); m.state = stateSkipped }},
		{name: "a resync applies the applied generation again", cfg: gen1, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.seed(1, "hash-1"); m.resync = true }},
		{name: "hash skip", cfg: gen3, kind: actSkip, state: stateSkipped, reason: "hash hash-1 already applied (generation 1)",
			setup: func(m *slotMachine) {
				m.seed(1, "hash-1")
				m.retryGen, m.nextRetry = 3, mt0.Add(time.Minute)
				m.fallback = fallbackState{gen: 1, hash: "hash-1"}
			},
			check: func(t *testing.T, m *slotMachine, d decision) {
				if d.cfg != gen3 || d.prevApplied != 1 || m.appliedGen != 3 || m.retryGen != 0 || !m.nextRetry.IsZero() ||
					m.fallback.gen != 0 || !m.firstWaitAt.IsZero() {
					t.Errorf("decision %+v, machine %+v", d, m)
				}
			}},
		{name: "a resync applies an unchanged hash", cfg: gen3, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.seed(1, "hash-1"); m.resync = true }},
		{name: "gate closed: wait", cfg: gen1, gate: wait, kind: actGate, state: stateWaiting, reason: "gated: waiting", asked: true,
			check: func(t *testing.T, _ *slotMachine, d decision) {
				if d.blocked {
					t.Error("blocked while waiting")
				}
			}},
		{name: "gate closed by a rejection: skip, blocked once", cfg: gen1, gate: skip, kind: actGate, state: stateSkipped, reason: "rejected by gw-0", asked: true,
			check: func(t *testing.T, m *slotMachine, d decision) {
				if !d.blocked || m.blockedGen != 1 || m.blockedBy != "gw-0" {
					t.Errorf("blocked %v by %d %q", d.blocked, m.blockedGen, m.blockedBy)
				}
				if again := m.decide(mt0, func(uint64) gateVerdict { return skip }); again.blocked {
					t.Error("blocked reported twice for one generation")
				}
			}},
		{name: "backoff: wait for the retry", cfg: gen1, gate: gateOpen, now: mt0.Add(time.Second), kind: actWait, until: mt0.Add(3 * time.Second), state: stateBackoff, asked: true,
			setup: func(m *slotMachine) { m.retryGen, m.retryAt = 1, mt0.Add(3*time.Second) }},
		{name: "backoff after a panic shows failed", cfg: gen1, gate: gateOpen, kind: actWait, until: mt0.Add(3 * time.Second), state: stateFailed, asked: true,
			setup: func(m *slotMachine) { m.retryGen, m.retryAt, m.panicked = 1, mt0.Add(3*time.Second), true }},
		{name: "backoff over: apply", cfg: gen1, gate: gateOpen, now: mt0.Add(3 * time.Second), kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.retryGen, m.retryAt = 1, mt0.Add(3*time.Second) }},
		{name: "a new generation interrupts the backoff", cfg: gen2, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.retryGen, m.retryAt = 1, mt0.Add(time.Hour) }},
		{name: "Retry-After holds for any generation", cfg: gen2, gate: gateOpen, kind: actWait, until: mt0.Add(time.Minute), state: stateBackoff, reason: "Retry-After", asked: true,
			setup: func(m *slotMachine) { m.notBefore = mt0.Add(time.Minute) },
			check: func(t *testing.T, m *slotMachine, _ decision) {
				if !m.nextRetry.Equal(mt0.Add(time.Minute)) {
					t.Errorf("next retry %v", m.nextRetry)
				}
			}},
		{name: "Retry-After holds on resync", cfg: gen1, gate: gateOpen, kind: actWait, until: mt0.Add(time.Minute), state: stateBackoff, reason: "Retry-After", asked: true,
			setup: func(m *slotMachine) { m.notBefore = mt0.Add(time.Minute); m.requestResync("restarted") }},
		{name: "min_interval: wait", opts: sinkspec.Options{MinInterval: 10 * time.Second}, cfg: gen1, gate: gateOpen, now: mt0.Add(4 * time.Second),
			kind: actWait, until: mt0.Add(10 * time.Second), state: stateWaiting, reason: "min_interval 10s: next apply at 2026-01-01T00:00:10Z", asked: true,
			setup: func(m *slotMachine) { m.lastStart = mt0 }},
		{name: "min_interval: first apply at once", opts: sinkspec.Options{MinInterval: 10 * time.Second}, cfg: gen1, gate: gateOpen, kind: actApply, state: statePending, asked: true},
		{name: "min_interval: elapsed", opts: sinkspec.Options{MinInterval: 10 * time.Second}, cfg: gen1, gate: gateOpen, now: mt0.Add(10 * time.Second), kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.lastStart = mt0 }},
		{name: "debounce: wait", opts: sinkspec.Options{Debounce: 2 * time.Second}, cfg: gen1, gate: gateOpen, now: mt0.Add(time.Second),
			kind: actWait, until: mt0.Add(2 * time.Second), state: stateWaiting, reason: "debounce 2s: applying at 2026-01-01T00:00:02Z", asked: true},
		{name: "debounce: a newer generation restarts it", opts: sinkspec.Options{Debounce: 2 * time.Second}, cfg: gen1, gate: gateOpen, now: mt0.Add(2 * time.Second),
			kind: actWait, until: mt0.Add(3 * time.Second), state: stateWaiting, reason: "applying at 2026-01-01T00:00:03Z", asked: true,
			setup: func(m *slotMachine) { m.offer(gen2, mt0.Add(time.Second)) }},
		{name: "debounce: max_delay caps it", opts: sinkspec.Options{Debounce: 2 * time.Second, MaxDelay: 3 * time.Second}, cfg: gen1, gate: gateOpen, now: mt0.Add(2500 * time.Millisecond),
			kind: actWait, until: mt0.Add(3 * time.Second), state: stateWaiting, reason: "applying at 2026-01-01T00:00:03Z", asked: true,
			setup: func(m *slotMachine) { m.offer(gen2, mt0.Add(2*time.Second)) }},
		{name: "debounce: due", opts: sinkspec.Options{Debounce: 2 * time.Second}, cfg: gen1, gate: gateOpen, now: mt0.Add(2 * time.Second), kind: actApply, state: statePending, asked: true},
		{name: "debounce: a sink's first generation applies at once", opts: sinkspec.Options{Debounce: 2 * time.Second}, gate: gateOpen, kind: actApply, state: statePending, asked: true,
			setup: func(m *slotMachine) { m.desired = gen1 }}, // addWorker: no arrival time
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			opts.Backoff = mtOpt.Backoff
			m := machineWith(opts, c.cfg)
			if c.setup != nil {
				c.setup(m)
			}
			now := c.now
			if now.IsZero() {
				now = mt0
			}
			asked := false
			d := m.decide(now, func(gen uint64) gateVerdict {
				asked = true
				if gen != m.desired.Generation {
					t.Errorf("gate asked for generation %d, want %d", gen, m.desired.Generation)
				}
				return c.gate
			})
			if d.kind != c.kind || !d.until.Equal(c.until) {
				t.Errorf("decision %d until %v, want %d until %v", d.kind, d.until, c.kind, c.until)
			}
			if asked != c.asked {
				t.Errorf("gate asked: %v, want %v", asked, c.asked)
			}
			if m.state != c.state || (c.reason == "") != (m.reason == "") || !strings.Contains(m.reason, c.reason) {
				t.Errorf("state %v %q, want %v %q", m.state, m.reason, c.state, c.reason)
			}
			if c.check != nil {
				c.check(t, m, d)
			}
		})
	}
}

// TestSlotMachineOffer: latest wins; a generation replaced before it was
// attempted counts as coalesced (not one attempted, applied or skipped
// for a rejection); options.cancel_in_flight cancels an older apply in
// flight.
func TestSlotMachineOffer(t *testing.T) {
	cases := []struct {
		name              string
		cancelOpt         bool
		setup             func(m *slotMachine)
		coalesced, cancel bool
	}{
		{name: "empty slot"},
		{name: "unattempted replaced", setup: func(m *slotMachine) { m.offer(gen1, mt0) }, coalesced: true},
		{name: "attempted replaced", setup: func(m *slotMachine) { m.offer(gen1, mt0); m.start(gen1, mt0) }},
		{name: "applied replaced", setup: func(m *slotMachine) { m.offer(gen1, mt0); m.seed(1, "hash-1") }},
		{name: "blocked replaced", setup: func(m *slotMachine) { m.offer(gen1, mt0); m.blockedGen = 1 }},
		{name: "in flight, no cancel_in_flight", setup: func(m *slotMachine) { m.offer(gen1, mt0); m.start(gen1, mt0) }},
		{name: "in flight, cancel_in_flight", cancelOpt: true, setup: func(m *slotMachine) { m.offer(gen1, mt0); m.start(gen1, mt0) }, cancel: true},
		{name: "in flight finished, cancel_in_flight", cancelOpt: true, setup: func(m *slotMachine) {
			m.offer(gen1, mt0)
			m.start(gen1, mt0)
			m.outcome(attemptOutcome{kind: outApplied, cfg: gen1}, mt0)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := machineWith(sinkspec.Options{CancelInFlight: c.cancelOpt}, nil)
			if c.setup != nil {
				c.setup(m)
			}
			first := m.firstWaitAt
			coalesced, cancel := m.offer(gen2, mt0.Add(time.Second))
			if coalesced != c.coalesced || cancel != c.cancel {
				t.Errorf("coalesced %v cancel %v, want %v %v", coalesced, cancel, c.coalesced, c.cancel)
			}
			if m.desired != gen2 || !m.desiredAt.Equal(mt0.Add(time.Second)) {
				t.Errorf("slot %v at %v", m.desired, m.desiredAt)
			}
			if !first.IsZero() && !m.firstWaitAt.Equal(first) {
				t.Errorf("max_delay's start moved from %v to %v", first, m.firstWaitAt)
			}
		})
	}
}

// TestSlotMachineStart: an attempt counts, clears the wait and the resync,
// and shows a resync's reason.
func TestSlotMachineStart(t *testing.T) {
	m := machineWith(mtOpt, gen1)
	m.requestResync("gateway restarted")
	m.nextRetry = mt0.Add(time.Minute)
	m.start(gen1, mt0.Add(time.Second))
	if m.state != stateApplying || m.reason != "resync: gateway restarted" || m.attempts != 1 || m.applyingGen != 1 ||
		m.attemptedGen != 1 || m.resync || m.resyncReason != "" || !m.nextRetry.IsZero() || !m.firstWaitAt.IsZero() || !m.lastStart.Equal(mt0.Add(time.Second)) {
		t.Errorf("after start: %+v", m)
	}
	m.start(gen1, mt0.Add(2*time.Second))
	if m.reason != "" || m.attempts != 2 {
		t.Errorf("second attempt: reason %q attempts %d", m.reason, m.attempts)
	}
}

// TestSlotMachineOutcome covers every outcome: what it changes, the
// result it reports and the backoff it schedules.
func TestSlotMachineOutcome(t *testing.T) {
	excluded := []*confighubv1.ExcludedEntity{{}}
	cases := []struct {
		name   string
		setup  func(m *slotMachine)
		out    attemptOutcome
		result Result
		state  state
		reason string
		next   time.Duration // from mt0; 0: none
		kick   bool
		check  func(t *testing.T, m *slotMachine, tr transition)
	}{
		{name: "abandoned changes nothing but the attempt in flight", out: attemptOutcome{kind: outAbandoned}, state: stateApplying,
			check: func(t *testing.T, m *slotMachine, _ transition) {
				if m.applyingGen != 0 || m.appliedGen != 0 {
					t.Errorf("applying %d applied %d", m.applyingGen, m.appliedGen)
				}
			}},
		{name: "applied", out: attemptOutcome{kind: outApplied}, result: ResultApplied, state: stateApplied,
			setup: func(m *slotMachine) {
				m.seed(0, "")
				m.streak, m.retryGen, m.nextRetry = 3, 1, mt0
				m.fallback = fallbackState{gen: 1, hash: "fb"}
			},
			check: func(t *testing.T, m *slotMachine, tr transition) {
				if m.appliedGen != 1 || m.appliedHash != "hash-1" || tr.prevApplied != 0 || m.streak != 0 || m.retryGen != 0 || m.fallback.gen != 0 || m.applyingGen != 0 {
					t.Errorf("machine %+v transition %+v", m, tr)
				}
			}},
		{name: "degraded", out: attemptOutcome{kind: outDegraded, fallback: fallbackState{hash: "fb", excluded: excluded}}, result: ResultDegraded,
			state: stateDegraded, reason: "running a fallback of generation 1 without 1 entities (hash fb)", kick: true,
			setup: func(m *slotMachine) { m.seed(0, "old"); m.streak, m.panicked = 2, true },
			check: func(t *testing.T, m *slotMachine, _ transition) {
				if m.rejectedGen != 1 || m.appliedHash != "fb" || m.appliedGen != 0 || m.fallback.gen != 1 || m.streak != 0 || m.panicked {
					t.Errorf("machine %+v", m)
				}
			}},
		{name: "superseded", out: attemptOutcome{kind: outSuperseded}, result: ResultCancelled, state: statePending,
			reason: "apply of generation 1 cancelled: a newer generation arrived"},
		{name: "rejected", out: attemptOutcome{kind: outFailed, permanent: true}, result: ResultRejected, state: stateFailed, kick: true,
			setup: func(m *slotMachine) { m.streak, m.retryGen = 2, 1 },
			check: func(t *testing.T, m *slotMachine, _ transition) {
				if m.rejectedGen != 1 || m.streak != 0 || m.retryGen != 0 || !m.nextRetry.IsZero() {
					t.Errorf("machine %+v", m)
				}
			}},
		{name: "retryable: first backoff", out: attemptOutcome{kind: outFailed, jitter: 0.5}, result: ResultFailed, state: stateBackoff, next: time.Second},
		{name: "retryable: backoff grows", out: attemptOutcome{kind: outFailed, jitter: 0.5}, result: ResultFailed, state: stateBackoff, next: 4 * time.Second,
			setup: func(m *slotMachine) { m.streak = 2 }},
		{name: "retryable: backoff caps", out: attemptOutcome{kind: outFailed, jitter: 0.5}, result: ResultFailed, state: stateBackoff, next: 8 * time.Second,
			setup: func(m *slotMachine) { m.streak = 10 }},
		{name: "retryable: jitter", out: attemptOutcome{kind: outFailed, jitter: 0}, result: ResultFailed, state: stateBackoff, next: 800 * time.Millisecond},
		{name: "Retry-After longer than the backoff", out: attemptOutcome{kind: outFailed, jitter: 0.5, retryAfter: time.Minute}, result: ResultFailed, state: stateBackoff, next: time.Minute,
			check: func(t *testing.T, m *slotMachine, _ transition) {
				if !m.notBefore.Equal(mt0.Add(time.Minute)) {
					t.Errorf("not before %v", m.notBefore)
				}
			}},
		{name: "Retry-After shorter than the backoff", out: attemptOutcome{kind: outFailed, jitter: 0.5, retryAfter: 500 * time.Millisecond}, result: ResultFailed, state: stateBackoff, next: time.Second,
			check: func(t *testing.T, m *slotMachine, _ transition) {
				if !m.notBefore.Equal(mt0.Add(500 * time.Millisecond)) {
					t.Errorf("not before %v", m.notBefore)
				}
			}},
		{name: "panicked: failed while retried", out: attemptOutcome{kind: outFailed, jitter: 0.5, panicked: true}, result: ResultFailed, state: stateFailed, next: time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := machineWith(mtOpt, gen1)
			m.decide(mt0, func(uint64) gateVerdict { return gateOpen })
			m.start(gen1, mt0)
			if c.setup != nil {
				c.setup(m)
			}
			takeChanges(m)
			o := c.out
			o.cfg = gen1
			tr := m.outcome(o, mt0)
			if tr.result != c.result || tr.kickWaiters != c.kick {
				t.Errorf("result %q kick %v, want %q %v", tr.result, tr.kickWaiters, c.result, c.kick)
			}
			if m.state != c.state || m.reason != c.reason {
				t.Errorf("state %v %q, want %v %q", m.state, m.reason, c.state, c.reason)
			}
			if c.next > 0 {
				at := mt0.Add(c.next)
				if tr.retryIn != c.next || !m.nextRetry.Equal(at) || m.retryGen != 1 || !m.retryAt.Equal(at) {
					t.Errorf("retry in %v at %v (gen %d), want %v", tr.retryIn, m.nextRetry, m.retryGen, c.next)
				}
				// The decision waits for it, then applies.
				if d := m.decide(mt0, func(uint64) gateVerdict { return gateOpen }); d.kind != actWait || !d.until.Equal(at) {
					t.Errorf("decision before the retry: %+v", d)
				}
				if d := m.decide(at, func(uint64) gateVerdict { return gateOpen }); d.kind != actApply {
					t.Errorf("decision at the retry: %+v", d)
				}
			} else if tr.retryIn != 0 || !m.nextRetry.IsZero() {
				t.Errorf("retry in %v at %v, want none", tr.retryIn, m.nextRetry)
			}
			if c.check != nil {
				c.check(t, m, tr)
			}
		})
	}
}

// TestSlotMachineResyncAndReachable: both end a backoff wait at once; a
// resync also forces the apply of an applied generation.
func TestSlotMachineResyncAndReachable(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(m *slotMachine)
	}{
		{"resync", func(m *slotMachine) { m.requestResync("restarted") }},
		{"reachable", func(m *slotMachine) { m.reachable() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := machineWith(mtOpt, gen1)
			m.start(gen1, mt0)
			m.outcome(attemptOutcome{kind: outFailed, cfg: gen1, jitter: 0.5}, mt0)
			c.do(m)
			if d := m.decide(mt0, func(uint64) gateVerdict { return gateOpen }); d.kind != actApply {
				t.Errorf("decision %+v, want apply", d)
			}
		})
	}
	m := machineWith(mtOpt, gen1)
	m.seed(1, "hash-1")
	m.requestResync("restarted")
	if d := m.decide(mt0, func(uint64) gateVerdict { return gateOpen }); d.kind != actApply {
		t.Errorf("resync of an applied generation: %+v, want apply", d)
	}
}

// TestSlotMachineStateChanges: every state change is reported once, in
// order, for the metrics.
func TestSlotMachineStateChanges(t *testing.T) {
	m := machineWith(mtOpt, gen1)
	m.decide(mt0, func(uint64) gateVerdict { return gateVerdict{reason: "gated"} }) // PENDING -> WAITING
	m.decide(mt0, func(uint64) gateVerdict { return gateVerdict{reason: "gated"} }) // unchanged
	m.queued("gateway", 1, 1)                                                       // -> PENDING
	m.start(gen1, mt0)                                                              // -> APPLYING
	m.outcome(attemptOutcome{kind: outApplied, cfg: gen1}, mt0)                     // -> APPLIED
	want := []stateChange{{statePending, stateWaiting}, {stateWaiting, statePending}, {statePending, stateApplying}, {stateApplying, stateApplied}}
	got := takeChanges(m)
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %v, want %v", i, got[i], want[i])
		}
	}
	if len(takeChanges(m)) != 0 {
		t.Error("changes reported twice")
	}
	if m.reason != "" {
		t.Errorf("reason %q", m.reason)
	}
}

// TestSlotMachineRefusal: a sink names the origin of its refusal of a
// generation (itself, or the sink whose rejection it skipped for), which
// the later waves' gates report.
func TestSlotMachineRefusal(t *testing.T) {
	m := machineWith(mtOpt, gen1)
	if r := m.refusal("me", 1); r != "" {
		t.Errorf("refusal before any %q", r)
	}
	m.decide(mt0, func(uint64) gateVerdict { return gateVerdict{skipBy: "gw-0", reason: "r"} })
	if r := m.refusal("me", 1); r != "gw-0" {
		t.Errorf("skipped: refusal %q, want gw-0", r)
	}
	if r := m.refusal("me", 2); r != "" {
		t.Errorf("another generation: refusal %q", r)
	}
	m.rejectedGen = 1
	if r := m.refusal("me", 1); r != "me" {
		t.Errorf("rejected: refusal %q, want me", r)
	}
}

// takeChanges collects the machine's state changes since the last call.
func takeChanges(m *slotMachine) []stateChange {
	var got []stateChange
	m.eachChange(func(c stateChange) { got = append(got, c) })
	return got
}
