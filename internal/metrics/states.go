package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// sinkStates is confighub_sink_state: per sink one series per state, 1 for
// the state it is in, written from one state per sink. With 10,000 Kong data
// planes connected it adds 16 MB of live heap where a GaugeVec's eight
// series objects per sink added 63 MB (GODEBUG=gctrace=1, docs/hybrid.md).
type sinkStates struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	by   map[string]*sinkState
}

// sinkState is one sink's series; Write reads current, so a scrape takes
// mu only to list the sinks.
type sinkState struct {
	kind    string
	current atomic.Int32
	series  []stateSeries
}

// stateSeries is one series of a sink, its labels sorted by name.
type stateSeries struct {
	desc   *prometheus.Desc
	owner  *sinkState
	state  confighubv1.SinkState
	labels []*dto.LabelPair
}

var (
	_ prometheus.Collector = (*sinkStates)(nil)
	_ prometheus.Metric    = (*stateSeries)(nil)
)

func newSinkStates() *sinkStates {
	o := prometheus.GaugeOpts{Name: "confighub_sink_state", Help: "The sink's current state: 1 for the state it is in, 0 for the others."}
	return &sinkStates{desc: prometheus.NewDesc(o.Name, o.Help, []string{"sink", "kind", "state"}, nil), by: map[string]*sinkState{}}
}

// set records the sink's state, building its series the first time or
// when its kind changed.
func (c *sinkStates) set(sink, kind string, to confighubv1.SinkState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ss := c.by[sink]
	if ss == nil || ss.kind != kind {
		ss = &sinkState{kind: kind, series: make([]stateSeries, len(states))}
		pair := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: &n, Value: &v} }
		k, s := pair("kind", kind), pair("sink", sink)
		for i, st := range states {
			ss.series[i] = stateSeries{desc: c.desc, owner: ss, state: st, labels: []*dto.LabelPair{k, s, pair("state", StateLabel(st))}}
		}
		c.by[sink] = ss
	}
	ss.current.Store(int32(to))
}

func (c *sinkStates) delete(sink string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.by, sink)
}

func (c *sinkStates) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sinkStates) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	all := make([]*sinkState, 0, len(c.by))
	for _, ss := range c.by {
		all = append(all, ss)
	}
	c.mu.Unlock()
	for _, ss := range all {
		for i := range ss.series {
			ch <- &ss.series[i]
		}
	}
}

func (s *stateSeries) Desc() *prometheus.Desc { return s.desc }

// Write shares the series' label pairs with the caller, which only reads them.
func (s *stateSeries) Write(m *dto.Metric) error {
	v := 0.0
	if confighubv1.SinkState(s.owner.current.Load()) == s.state {
		v = 1
	}
	m.Label, m.Gauge = s.labels, &dto.Gauge{Value: &v}
	return nil
}
