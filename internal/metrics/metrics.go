package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/engine"
)

// DurationBuckets (seconds) of the apply and convergence histograms: 5 ms (a file) to 5 min (Konnect).
var DurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Engine implements engine.Metrics with Prometheus series.
type Engine struct {
	applies       *prometheus.CounterVec
	applyDuration *prometheus.HistogramVec
	configBytes   *prometheus.GaugeVec
	lastSuccess   *prometheus.GaugeVec
	entityErrors  *prometheus.GaugeVec
	excluded      *prometheus.GaugeVec
	coalesced     *prometheus.CounterVec
	state         *sinkStates
	generation    *prometheus.GaugeVec
	convergence   *prometheus.HistogramVec
	perSink       []interface{ DeletePartialMatch(prometheus.Labels) int } // by sink and kind

	// mu guards each sink's kind and reasons, and orders updates against SinkRemoved.
	mu      sync.Mutex
	kinds   map[string]string
	reasons map[string]map[string]bool
}

// MaxReasonsPerSink bounds the distinct reason labels per sink (a plugin
// chooses its codes); past it, or past maxReasonLen, a reason is "other".
const (
	MaxReasonsPerSink = 16
	maxReasonLen      = 32
)

// reasonLabel returns reason, or "other" when it is not a short [a-z0-9_.-]
// code or the sink has MaxReasonsPerSink others; the caller holds mu.
func (m *Engine) reasonLabel(sink, reason string) string {
	if len(reason) > maxReasonLen || strings.IndexFunc(reason, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' && r != '.'
	}) >= 0 {
		return "other"
	}
	seen := m.reasons[sink]
	if seen == nil {
		seen = map[string]bool{}
		m.reasons[sink] = seen
	}
	if !seen[reason] {
		if len(seen) >= MaxReasonsPerSink {
			return "other"
		}
		seen[reason] = true
	}
	return reason
}

var _ engine.Metrics = (*Engine)(nil)

// states are the SinkState values exported as confighub_sink_state.
var states = func() []confighubv1.SinkState {
	var out []confighubv1.SinkState
	for v := range confighubv1.SinkState_name {
		if s := confighubv1.SinkState(v); s != confighubv1.SinkState_SINK_STATE_UNSPECIFIED {
			out = append(out, s)
		}
	}
	return out
}()

// StateLabel is the value of the state label: "applied" for SINK_STATE_APPLIED.
func StateLabel(s confighubv1.SinkState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SINK_STATE_"))
}

// NewEngine registers the engine series on reg.
func NewEngine(reg prometheus.Registerer) (*Engine, error) {
	sinkLabels := []string{"sink", "kind"}
	gauge := func(o prometheus.GaugeOpts, labels ...string) *prometheus.GaugeVec { // by sink and kind unless labels say
		if len(labels) == 0 {
			labels = sinkLabels
		}
		return prometheus.NewGaugeVec(o, labels)
	}
	histogram := func(o prometheus.HistogramOpts, labels ...string) *prometheus.HistogramVec {
		o.Buckets = DurationBuckets
		return prometheus.NewHistogramVec(o, labels)
	}
	m := &Engine{
		kinds: map[string]string{}, reasons: map[string]map[string]bool{},
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighub_sink_applies_total",
			Help: "Apply attempts per sink, by result (applied, skipped, failed, rejected, degraded, cancelled) and reason (the error code of a failure, why a skip).",
		}, []string{"sink", "kind", "result", "reason"}),
		applyDuration: histogram(prometheus.HistogramOpts{Name: "confighub_sink_apply_duration_seconds", Help: "Duration of apply attempts per sink (hash skips, which do not call the destination, are not observed)."}, sinkLabels...),
		configBytes:   gauge(prometheus.GaugeOpts{Name: "confighub_sink_config_bytes", Help: "Size in bytes of the configuration the sink last attempted."}),
		lastSuccess:   gauge(prometheus.GaugeOpts{Name: "confighub_sink_last_success_timestamp_seconds", Help: "Unix time of the sink's last successful apply."}),
		entityErrors:  gauge(prometheus.GaugeOpts{Name: "confighub_sink_entity_errors", Help: "Per-entity errors the destination reported for the sink's last failed apply (0 after a success)."}),
		excluded:      gauge(prometheus.GaugeOpts{Name: "confighub_sink_excluded_entities", Help: "Entities the fallback the sink's destination runs leaves out of the desired generation (0 when it runs no fallback; on_reject: ON_REJECT_FALLBACK)."}),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "confighub_sink_coalesced_total",
			Help: "Generations replaced in the sink's slot by a newer one before the sink attempted them (latest wins).",
		}, sinkLabels),
		state:       newSinkStates(),
		generation:  gauge(prometheus.GaugeOpts{Name: "confighub_stream_generation", Help: "The stream's current (last acknowledged) generation."}, "stream"),
		convergence: histogram(prometheus.HistogramOpts{Name: "confighub_stream_convergence_seconds", Help: "Time from a generation's accept (ack) until every sink of its stream applied it."}, "stream"),
	}
	m.perSink = append(m.perSink, m.applies, m.applyDuration, m.configBytes, m.lastSuccess, m.entityErrors, m.excluded, m.coalesced)
	for _, c := range []prometheus.Collector{m.applies, m.applyDuration, m.configBytes, m.lastSuccess, m.entityErrors, m.excluded, m.coalesced, m.state, m.generation, m.convergence} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register engine metrics: %w", err)
		}
	}
	return m, nil
}

// lock takes mu, records the sink's kind (dropping a previous kind's series) and returns Unlock.
func (m *Engine) lock(sink, kind string) func() {
	m.mu.Lock()
	if prev, ok := m.kinds[sink]; ok && prev != kind {
		m.deleteSeries(prometheus.Labels{"sink": sink, "kind": prev})
		m.state.delete(sink)
		delete(m.reasons, sink)
	}
	m.kinds[sink] = kind
	return m.mu.Unlock
}

func (m *Engine) deleteSeries(l prometheus.Labels) {
	for _, v := range m.perSink {
		v.DeletePartialMatch(l)
	}
}

// ApplyDone counts one attempt and, unless it was a hash skip, observes its duration.
func (m *Engine) ApplyDone(sink, kind string, result engine.Result, reason string, d time.Duration, configBytes int) {
	defer m.lock(sink, kind)()
	m.applies.WithLabelValues(sink, kind, string(result), m.reasonLabel(sink, reason)).Inc()
	m.configBytes.WithLabelValues(sink, kind).Set(float64(configBytes))
	if result != engine.ResultSkipped {
		m.applyDuration.WithLabelValues(sink, kind).Observe(d.Seconds())
	}
}

// StateChanged sets the sink's state series.
func (m *Engine) StateChanged(sink, kind string, _, to confighubv1.SinkState) {
	defer m.lock(sink, kind)()
	m.state.set(sink, kind, to)
}

// Coalesced counts a generation replaced in the slot.
func (m *Engine) Coalesced(sink, kind string) {
	defer m.lock(sink, kind)()
	m.coalesced.WithLabelValues(sink, kind).Inc()
}

// EntityErrors sets the entity error count of the last failed apply.
func (m *Engine) EntityErrors(sink, kind string, n int) {
	defer m.lock(sink, kind)()
	m.entityErrors.WithLabelValues(sink, kind).Set(float64(n))
}

// ExcludedEntities sets the number of entities the sink's running fallback leaves out.
func (m *Engine) ExcludedEntities(sink, kind string, n int) {
	defer m.lock(sink, kind)()
	m.excluded.WithLabelValues(sink, kind).Set(float64(n))
}

// LastSuccess sets the last success timestamp.
func (m *Engine) LastSuccess(sink, kind string, t time.Time) {
	defer m.lock(sink, kind)()
	m.lastSuccess.WithLabelValues(sink, kind).Set(float64(t.UnixNano()) / 1e9)
}

// StreamGeneration sets the stream's generation.
func (m *Engine) StreamGeneration(stream string, generation uint64) {
	m.generation.WithLabelValues(stream).Set(float64(generation))
}

// StreamDeleted deletes every series of the stream.
func (m *Engine) StreamDeleted(stream string) {
	l := prometheus.Labels{"stream": stream}
	m.generation.DeletePartialMatch(l)
	m.convergence.DeletePartialMatch(l)
}

// StreamConverged observes the accept-to-converged time of a generation.
func (m *Engine) StreamConverged(stream string, _ uint64, d time.Duration) {
	m.convergence.WithLabelValues(stream).Observe(d.Seconds())
}

// SinkRemoved deletes every series of the sink.
func (m *Engine) SinkRemoved(sink, _ string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kinds, sink)
	delete(m.reasons, sink)
	m.deleteSeries(prometheus.Labels{"sink": sink})
	m.state.delete(sink)
}

// Set is the hub's whole metric set on one private registry.
type Set struct {
	Registry *prometheus.Registry
	Engine   *Engine
	GRPC     *grpcprom.ServerMetrics
	Bounds   *Bounds
}

// New builds the registry: Go, process, gRPC server and engine metrics.
func New() (*Set, error) {
	reg := prometheus.NewRegistry()
	gm := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
		grpcprom.WithHistogramBuckets([]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}),
	))
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gm,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	em, err := NewEngine(reg)
	if err != nil {
		return nil, err
	}
	bm, err := newBounds(reg)
	if err != nil {
		return nil, fmt.Errorf("register bound metrics: %w", err)
	}
	return &Set{Registry: reg, Engine: em, GRPC: gm, Bounds: bm}, nil
}

// Server is the /metrics HTTP endpoint.
type Server struct {
	srv  *http.Server
	lis  net.Listener
	done chan error
}

// ListenOption configures Listen.
type ListenOption func(*listenConfig)

type listenConfig struct {
	prof *profiling      // when set, serves the profiles
	base context.Context // when set, the base of every request's context
}

// WithBaseContext makes ctx the base of every request's context (Shutdown never ends a profile; ctx does).
func WithBaseContext(ctx context.Context) ListenOption {
	return func(l *listenConfig) { l.base = ctx }
}

// WithProfiling also serves Go's profiles under /debug/pprof/; with a,
// each needs an admin token, with nil they are as open as /metrics.
func WithProfiling(a *auth.Authenticator) ListenOption {
	return func(l *listenConfig) { l.prof = &profiling{auth: a, running: make(chan struct{}, 1)} }
}

// Listen binds addr and serves /metrics until Shutdown; root, if not nil, serves every other path.
func (s *Set) Listen(addr string, log *slog.Logger, root http.Handler, opts ...ListenOption) (*Server, error) {
	var cfg listenConfig
	for _, o := range opts {
		o(&cfg)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{Registry: s.Registry, EnableOpenMetrics: true}))
	if cfg.prof != nil {
		cfg.prof.log = log
		cfg.prof.register(mux)
	}
	if root != nil {
		mux.Handle("/", root)
	} else {
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintln(w, "confighub metrics: see /metrics")
		})
	}
	ms := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		lis:  lis,
		done: make(chan error, 1),
	}
	if cfg.base != nil {
		ms.srv.BaseContext = func(net.Listener) context.Context { return cfg.base }
	}
	go func() { ms.done <- ms.srv.Serve(lis) }()
	return ms, nil
}

// Addr is the bound address (useful with port 0).
func (m *Server) Addr() string { return m.lis.Addr().String() }

// Shutdown stops the HTTP server and waits for its goroutine.
func (m *Server) Shutdown(ctx context.Context) error {
	err := m.srv.Shutdown(ctx)
	if serr := <-m.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
