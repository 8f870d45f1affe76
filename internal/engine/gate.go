package engine

import (
	"fmt"
	"slices"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// gate says whether w may apply generation gen now. e.mu is held.
func (e *Engine) gate(w *worker, gen uint64) gateVerdict {
	switch w.opts.Gate {
	case confighubv1.Gate_GATE_NONE:
		return gateOpen
	case confighubv1.Gate_GATE_ANY_GATEWAY:
		return gateAnyGateway(w, gen)
	default:
		return gateWave(w, gen)
	}
}

func gateAnyGateway(w *worker, gen uint64) gateVerdict {
	var gateways int
	var refused []string
	for _, m := range w.st.sinks {
		if m.w == w || !m.gateway {
			continue
		}
		if m.appliedGen() >= gen {
			return gateOpen
		}
		gateways++
		if r := m.refusal(gen); r != "" {
			refused = append(refused, r)
		}
	}
	switch {
	case gateways == 0:
		return gateOpen // no gateway to wait for
	case len(refused) == gateways:
		r := slices.Min(refused)
		return gateVerdict{skipBy: r, reason: fmt.Sprintf("generation %d was rejected by sink %q (every gateway sink of stream %q refused it)", gen, r, w.st.name)}
	}
	return gateVerdict{reason: fmt.Sprintf("gated: waiting for a gateway sink of stream %q to apply generation %d (%d gateway sinks)", w.st.name, gen, gateways)}
}

func gateWave(w *worker, gen uint64) gateVerdict {
	lowerWaves := false
	for wave := range w.st.waves {
		lowerWaves = lowerWaves || wave < w.opts.Wave
	}
	if !lowerWaves {
		return gateOpen
	}
	var lower, applied int
	var refused []string
	for _, m := range w.st.sinks {
		if m.opts.Wave >= w.opts.Wave {
			continue
		}
		lower++
		if m.appliedGen() >= gen {
			applied++
		} else if r := m.refusal(gen); r != "" {
			refused = append(refused, r)
		}
	}
	need := lower
	if m := int(w.opts.WaveMinApplied); m > 0 && m < lower {
		need = m
	}
	if applied >= need {
		return gateOpen
	}
	if lower-len(refused) < need {
		r := slices.Min(refused)
		return gateVerdict{skipBy: r, reason: fmt.Sprintf("generation %d was rejected by sink %q in an earlier wave; it does not reach wave %d", gen, r, w.opts.Wave)}
	}
	return gateVerdict{reason: fmt.Sprintf("gated: waiting for %d of %d sinks of waves below %d to apply generation %d (%d applied)", need, lower, w.opts.Wave, gen, applied)}
}
