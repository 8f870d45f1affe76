package engine

import "github.com/confighub/confighub/config"

// HeldConfigs returns the distinct configurations the engine references
// (streams' current ones and every sink's slot, last applied, last failed)
// and the largest number any one sink holds, for memory-bound checks.
func HeldConfigs(e *Engine) (distinct, perSinkMax int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[*config.Config]struct{}{}
	add := func(c *config.Config) {
		if c != nil {
			seen[c] = struct{}{}
		}
	}
	for _, st := range e.streams {
		add(st.cur)
	}
	for _, m := range e.sinks {
		w := m.w
		if w == nil {
			continue
		}
		mine := map[*config.Config]struct{}{}
		for _, c := range []*config.Config{w.m.desired, w.lastAppliedCfg, w.lastFailedCfg} {
			if c != nil {
				mine[c] = struct{}{}
			}
			add(c)
		}
		perSinkMax = max(perSinkMax, len(mine))
	}
	return len(seen), perSinkMax
}

// WithRandom sets the source of backoff jitter, uniform in [0,1).
func WithRandom(f func() float64) Option { return func(e *Engine) { e.rnd = f } }
