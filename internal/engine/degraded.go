package engine

import (
	"fmt"
	"log/slog"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// fallbackState is the fallback a DEGRADED sink's destination runs.
type fallbackState struct {
	gen      uint64 // the generation it was built from; 0: none
	hash     string // the fallback's own hash
	excluded []*confighubv1.ExcludedEntity
}

// degraded records an apply the destination answered with a fallback
// (sink.Degraded): the generation counts as rejected (not converged,
// later waves skip it, not retried until a new generation or a resync),
// the sink is DEGRADED, and applied_hash is the fallback's, so a later
// generation is never skipped as already applied while the destination
// holds a part of another. e.mu is held.
func (w *worker) degraded(cfg *config.Config, d *sink.Degraded, dur time.Duration, log *slog.Logger) {
	e := w.e
	rej := d.Rejection
	if rej == nil {
		rej = &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: "rejected"}
	}
	rej = e.redactError(rej, w.scrub)
	w.fallback = fallbackState{gen: cfg.Generation, hash: d.Hash, excluded: d.Excluded}
	w.rejectedGen = cfg.Generation
	w.appliedHash = d.Hash
	w.lastFailedCfg, w.lastFailedErr = cfg, rej
	w.lastAppliedTime = e.clock.Now()
	w.appliesTotal++
	w.streak, w.retryGen, w.nextRetry = 0, 0, time.Time{}
	w.health, w.panicked = "", false
	w.applyErr, w.applyErrCode, w.entityErrors = rej.Error(), string(sink.CodeRejected), rej.EntityErrors
	w.setRejectedState()
	e.metrics.ApplyDone(w.name, w.kind, ResultDegraded, string(sink.CodeRejected), dur, cfg.Size())
	e.metrics.EntityErrors(w.name, w.kind, len(rej.EntityErrors))
	e.metrics.ExcludedEntities(w.name, w.kind, len(d.Excluded))
	log.Warn("apply", "result", ResultDegraded, "excluded", len(d.Excluded), "fallback_hash", short(d.Hash),
		"error", rej.Error(), "note", "the destination runs this generation without the excluded entities; a new configuration is tried whole at once")
	e.kickWaiters(w.st)
}

// setRejectedState shows a rejected desired generation: DEGRADED when the
// destination runs its fallback, else FAILED. e.mu is held.
func (w *worker) setRejectedState() {
	if w.fallback.gen != 0 && w.fallback.gen == w.rejectedGen {
		w.setState(stateDegraded, fmt.Sprintf("running a fallback of generation %d without %d entities (hash %s)",
			w.fallback.gen, len(w.fallback.excluded), short(w.fallback.hash)))
		return
	}
	w.setState(stateFailed, "")
}
