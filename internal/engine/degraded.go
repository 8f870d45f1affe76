package engine

import (
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
// (sink.Degraded): the generation counts as rejected and the sink is
// DEGRADED (slotMachine.outcome). e.mu is held.
func (w *worker) degraded(cfg *config.Config, d *sink.Degraded, dur time.Duration, log *slog.Logger) {
	e := w.e
	rej := d.Rejection
	if rej == nil {
		rej = &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: "rejected"}
	}
	rej = e.redactError(rej, w.scrub)
	now := e.clock.Now()
	w.m.outcome(attemptOutcome{kind: outDegraded, cfg: cfg, fallback: fallbackState{hash: d.Hash, excluded: d.Excluded}}, now)
	w.lastFailedCfg, w.lastFailedErr = cfg, rej
	w.lastAppliedTime = now
	w.appliesTotal++
	w.health = ""
	w.applyErr, w.applyErrCode, w.entityErrors = rej.Error(), string(sink.CodeRejected), rej.EntityErrors
	w.reportState()
	e.metrics.ApplyDone(w.name, w.kind, ResultDegraded, string(sink.CodeRejected), dur, cfg.Size())
	e.metrics.EntityErrors(w.name, w.kind, len(rej.EntityErrors))
	e.metrics.ExcludedEntities(w.name, w.kind, len(d.Excluded))
	log.Warn("apply", "result", ResultDegraded, "excluded", len(d.Excluded), "fallback_hash", short(d.Hash),
		"error", rej.Error(), "note", "the destination runs this generation without the excluded entities; a new configuration is tried whole at once")
	e.kickWaiters(w.st)
}
