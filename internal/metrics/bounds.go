package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
)

// Bounds exports each bound of the hub by its flag: the limit, what is held of it (read at each scrape) and the refusals.
type Bounds struct {
	refusals *prometheus.CounterVec
	limit    *prometheus.Desc
	used     *prometheus.Desc
	source   atomic.Pointer[func() []hub.Usage]
}

var (
	_ hub.Refusals         = (*Bounds)(nil)
	_ prometheus.Collector = (*Bounds)(nil)
)

func newBounds(reg prometheus.Registerer) (*Bounds, error) {
	b := &Bounds{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighub_limit_refusals_total",
			Help: "Requests refused with ResourceExhausted because a bound was reached, by the flag that sets the bound.",
		}, []string{"flag"}),
		limit: desc(prometheus.Opts{Name: "confighub_limit", Help: "The bound each flag sets (0: no bound)."}),
		used:  desc(prometheus.Opts{Name: "confighub_limit_used", Help: "What the hub holds of each bound (for --max-concurrent-streams: the busiest connection's calls)."}),
	}
	for _, f := range []string{hub.FlagMaxStreams, hub.FlagMaxSinks, hub.FlagMaxWatchers, hub.FlagMaxHeldConfigBytes, server.FlagMaxConcurrentStreams} {
		b.refusals.WithLabelValues(f) // at zero from the first scrape
	}
	if err := reg.Register(b); err != nil {
		return nil, err
	}
	return b, nil
}

// desc is the description of a gauge by flag read at each scrape.
func desc(o prometheus.Opts) *prometheus.Desc {
	return prometheus.NewDesc(o.Name, o.Help, []string{"flag"}, nil)
}

// SetSource sets what the scrapes read (before it, only the refusals).
func (b *Bounds) SetSource(f func() []hub.Usage) { b.source.Store(&f) }

// Refused counts one refusal of the bound flag sets.
func (b *Bounds) Refused(flag string) { b.refusals.WithLabelValues(flag).Inc() }

// Describe implements prometheus.Collector.
func (b *Bounds) Describe(ch chan<- *prometheus.Desc) {
	b.refusals.Describe(ch)
	ch <- b.limit
	ch <- b.used
}

// Collect implements prometheus.Collector.
func (b *Bounds) Collect(ch chan<- prometheus.Metric) {
	b.refusals.Collect(ch)
	src := b.source.Load()
	if src == nil {
		return
	}
	for _, u := range (*src)() {
		ch <- prometheus.MustNewConstMetric(b.limit, prometheus.GaugeValue, float64(u.Limit), u.Flag)
		ch <- prometheus.MustNewConstMetric(b.used, prometheus.GaugeValue, float64(u.Used), u.Flag)
	}
}
