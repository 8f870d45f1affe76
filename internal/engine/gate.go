package engine

import (
	"fmt"
	"sort"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// gate says whether w may apply generation gen now (gateVerdict), over
// every sink of the stream: the ones run here and, on replicas, the peers
// as the shared status view has them. e.mu is held.
func (e *Engine) gate(w *worker, gen uint64) gateVerdict {
	switch w.opts.Gate {
	case confighubv1.Gate_GATE_NONE:
		return gateOpen
	case confighubv1.Gate_GATE_ANY_GATEWAY:
		return e.gateAnyGateway(w, gen)
	default:
		return e.gateWave(w, gen)
	}
}

func (e *Engine) gateAnyGateway(w *worker, gen uint64) gateVerdict {
	var gateways, refused []string
	for _, s := range w.st.sinks {
		if s == w || !s.caps.Gateway {
			continue
		}
		if s.m.appliedGen >= gen {
			return gateOpen
		}
		gateways = append(gateways, s.name)
		if r := s.m.refusal(s.name, gen); r != "" {
			refused = append(refused, r)
		}
	}
	for _, p := range w.st.peers {
		if !p.gateway {
			continue
		}
		if p.appliedGen() >= gen {
			return gateOpen
		}
		gateways = append(gateways, p.name)
		if r := p.rejecter(gen); r != "" {
			refused = append(refused, r)
		}
	}
	if len(gateways) == 0 {
		return gateOpen // no gateway to wait for
	}
	if len(refused) == len(gateways) {
		sort.Strings(refused)
		return gateVerdict{skipBy: refused[0], reason: fmt.Sprintf("generation %d was rejected by sink %q (every gateway sink of stream %q refused it)", gen, refused[0], w.st.name)}
	}
	return gateVerdict{reason: fmt.Sprintf("gated: waiting for a gateway sink of stream %q to apply generation %d (%d gateway sinks)", w.st.name, gen, len(gateways))}
}

func (e *Engine) gateWave(w *worker, gen uint64) gateVerdict {
	lowerWaves := false
	for wave := range w.st.waves {
		if wave < w.opts.Wave {
			lowerWaves = true
			break
		}
	}
	if !lowerWaves {
		return gateOpen
	}
	var lower, applied int
	var refused []string
	for _, s := range w.st.sinks {
		if s.opts.Wave >= w.opts.Wave {
			continue
		}
		lower++
		if s.m.appliedGen >= gen {
			applied++
		} else if r := s.m.refusal(s.name, gen); r != "" {
			refused = append(refused, r)
		}
	}
	for _, p := range w.st.peers {
		if p.opts.Wave >= w.opts.Wave {
			continue
		}
		lower++
		if p.appliedGen() >= gen {
			applied++
		} else if r := p.rejecter(gen); r != "" {
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
		sort.Strings(refused)
		return gateVerdict{skipBy: refused[0], reason: fmt.Sprintf("generation %d was rejected by sink %q in an earlier wave; it does not reach wave %d", gen, refused[0], w.opts.Wave)}
	}
	return gateVerdict{reason: fmt.Sprintf("gated: waiting for %d of %d sinks of waves below %d to apply generation %d (%d applied)", need, lower, w.opts.Wave, gen, applied)}
}
