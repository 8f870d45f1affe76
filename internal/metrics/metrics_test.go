package metrics_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/metrics"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newEngineMetrics(t *testing.T) (*metrics.Engine, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.NewEngine(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestSeries(t *testing.T) {
	m, reg := newEngineMetrics(t)
	m.ApplyDone("gw-0", "kong", engine.ResultApplied, "", 250*time.Millisecond, 1024)
	m.ApplyDone("gw-0", "kong", engine.ResultFailed, "timeout", 2*time.Second, 1024)
	m.ApplyDone("gw-0", "kong", engine.ResultSkipped, "hash-unchanged", 0, 1024)
	m.ApplyDone("gw-1", "kong", engine.ResultApplied, "", 100*time.Millisecond, 2048)
	m.StateChanged("gw-0", "kong", confighubv1.SinkState_SINK_STATE_PENDING, confighubv1.SinkState_SINK_STATE_BACKOFF)
	m.Coalesced("gw-0", "kong")
	m.Coalesced("gw-0", "kong")
	m.EntityErrors("gw-0", "kong", 3)
	m.ExcludedEntities("gw-0", "kong", 2)
	m.LastSuccess("gw-0", "kong", time.Unix(1700000000, 500_000_000))
	m.StreamGeneration("default", 7)
	m.StreamConverged("default", 7, 1500*time.Millisecond)

	text := gather(t, reg)
	for _, line := range []string{
		`confighub_sink_applies_total{kind="kong",reason="",result="applied",sink="gw-0"} 1`,
		`confighub_sink_applies_total{kind="kong",reason="",result="applied",sink="gw-1"} 1`,
		`confighub_sink_applies_total{kind="kong",reason="hash-unchanged",result="skipped",sink="gw-0"} 1`,
		`confighub_sink_applies_total{kind="kong",reason="timeout",result="failed",sink="gw-0"} 1`,
		`confighub_sink_coalesced_total{kind="kong",sink="gw-0"} 2`,
		`confighub_sink_config_bytes{kind="kong",sink="gw-0"} 1024`,
		`confighub_sink_config_bytes{kind="kong",sink="gw-1"} 2048`,
		`confighub_sink_entity_errors{kind="kong",sink="gw-0"} 3`,
		`confighub_sink_excluded_entities{kind="kong",sink="gw-0"} 2`,
		`confighub_sink_last_success_timestamp_seconds{kind="kong",sink="gw-0"} 1.7000000005e+09`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="applied"} 0`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="applying"} 0`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="backoff"} 1`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="failed"} 0`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="pending"} 0`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="skipped"} 0`,
		`confighub_sink_state{kind="kong",sink="gw-0",state="waiting"} 0`,
		`confighub_stream_generation{stream="default"} 7`,
		// The skip is not observed: two gw-0 attempts are.
		`confighub_sink_apply_duration_seconds_count{kind="kong",sink="gw-0"} 2`,
		`confighub_sink_apply_duration_seconds_sum{kind="kong",sink="gw-0"} 2.25`,
		`confighub_sink_apply_duration_seconds_bucket{kind="kong",sink="gw-0",le="0.25"} 1`,
		`confighub_sink_apply_duration_seconds_bucket{kind="kong",sink="gw-0",le="2.5"} 2`,
		`confighub_stream_convergence_seconds_count{stream="default"} 1`,
		`confighub_stream_convergence_seconds_sum{stream="default"} 1.5`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("missing %s in:\n%s", line, text)
		}
	}
	if n := strings.Count(text, "confighub_sink_state{"); n != 8 {
		t.Errorf("confighub_sink_state has %d series, want one per state (8)", n)
	}

	// A deleted sink's series go; the other sink's stay.
	m.SinkRemoved("gw-0", "kong")
	text = gather(t, reg)
	if strings.Contains(text, `sink="gw-0"`) {
		t.Errorf("series of the removed sink remain:\n%s", text)
	}
	if !strings.Contains(text, `confighub_sink_applies_total{kind="kong",reason="",result="applied",sink="gw-1"} 1`) {
		t.Errorf("the other sink's series went too:\n%s", text)
	}
}

// TestKindChange: a sink put again with another kind keeps only the
// series of its new kind.
func TestKindChange(t *testing.T) {
	m, reg := newEngineMetrics(t)
	m.ApplyDone("x", "file", engine.ResultApplied, "", time.Millisecond, 10)
	m.StateChanged("x", "file", confighubv1.SinkState_SINK_STATE_APPLYING, confighubv1.SinkState_SINK_STATE_APPLIED)
	m.StateChanged("x", "kong", confighubv1.SinkState_SINK_STATE_UNSPECIFIED, confighubv1.SinkState_SINK_STATE_PENDING)
	text := gather(t, reg)
	if strings.Contains(text, `kind="file"`) {
		t.Errorf("series of the old kind remain:\n%s", text)
	}
	if !strings.Contains(text, `confighub_sink_state{kind="kong",sink="x",state="pending"} 1`) {
		t.Errorf("the new kind's state is missing:\n%s", text)
	}
}

func gather(t *testing.T, reg prometheus.Gatherer) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			lbl := func(extra ...string) string {
				var parts []string
				for _, l := range m.GetLabel() {
					parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
				}
				parts = append(parts, extra...)
				return "{" + strings.Join(parts, ",") + "}"
			}
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				sb.WriteString(mf.GetName() + "_count" + lbl() + " " + ftoa(float64(h.GetSampleCount())) + "\n")
				sb.WriteString(mf.GetName() + "_sum" + lbl() + " " + ftoa(h.GetSampleSum()) + "\n")
				for _, b := range h.GetBucket() {
					sb.WriteString(mf.GetName() + "_bucket" + lbl(`le="`+ftoa(b.GetUpperBound())+`"`) + " " + ftoa(float64(b.GetCumulativeCount())) + "\n")
				}
			case m.GetCounter() != nil:
				sb.WriteString(mf.GetName() + lbl() + " " + ftoa(m.GetCounter().GetValue()) + "\n")
			case m.GetGauge() != nil:
				sb.WriteString(mf.GetName() + lbl() + " " + ftoa(m.GetGauge().GetValue()) + "\n")
			}
		}
	}
	return sb.String()
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// recSink applies by calling fn.
type recSink struct{ fn func(*config.Config) error }

func (s *recSink) Apply(_ context.Context, c *config.Config) error { return s.fn(c) }
func (s *recSink) Describe() sink.Capabilities                     { return sink.Capabilities{} }

// TestEngineWiring drives a real engine with the Prometheus metrics: after
// an apply the per-sink and per-stream series show it, after a failure the
// failure, and after DeleteSink the sink's series are gone.
func TestEngineWiring(t *testing.T) {
	set, err := metrics.New()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	fail := false
	reg := sink.NewRegistry()
	if err := reg.Register("rec", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) {
		return &recSink{fn: func(*config.Config) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return &sink.Error{Code: "rejected", Permanent: true, Message: "no", EntityErrors: []*confighubv1.EntityError{{EntityType: "route"}}}
			}
			return nil
		}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(reg, engine.WithMetrics(set.Engine))
	defer eng.Stop()
	if _, _, err := eng.PutSink(&confighubv1.Sink{Name: "a", Kind: "rec"}); err != nil {
		t.Fatal(err)
	}
	publish := func(gen uint64, body string) {
		raw := []byte(body)
		eng.Publish(config.New("default", gen, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Now()))
	}
	waitState := func(want confighubv1.SinkState, gen uint64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for ev := range eng.View().Watch(ctx, "default", 0) {
			var list []*confighubv1.SinkStatus
			if s := ev.GetSnapshot(); s != nil {
				list = s.GetSinks()
			} else if s := ev.GetSink(); s != nil {
				list = []*confighubv1.SinkStatus{s}
			}
			for _, s := range list {
				if s.GetSink() == "a" && s.GetState() == want && s.GetDesiredGeneration() == gen {
					return
				}
			}
		}
		t.Fatalf("sink a never reached %v at generation %d", want, gen)
	}
	publish(1, `{"_format_version":"3.0"}`)
	waitState(confighubv1.SinkState_SINK_STATE_APPLIED, 1)
	text := scrape(t, set)
	for _, line := range []string{
		`confighub_sink_applies_total{kind="rec",reason="",result="applied",sink="a"} 1`,
		`confighub_sink_state{kind="rec",sink="a",state="applied"} 1`,
		`confighub_sink_config_bytes{kind="rec",sink="a"} 25`,
		`confighub_stream_generation{stream="default"} 1`,
		`confighub_stream_convergence_seconds_count{stream="default"} 1`,
		`confighub_sink_apply_duration_seconds_count{kind="rec",sink="a"} 1`,
		`confighub_sink_last_success_timestamp_seconds{kind="rec",sink="a"}`,
		`go_goroutines`,
		`process_start_time_seconds`,
	} {
		if !strings.Contains(text, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	publish(2, `{"_format_version":"3.0","services":[]}`)
	waitState(confighubv1.SinkState_SINK_STATE_FAILED, 2)
	text = scrape(t, set)
	for _, line := range []string{
		`confighub_sink_applies_total{kind="rec",reason="rejected",result="rejected",sink="a"} 1`,
		`confighub_sink_state{kind="rec",sink="a",state="failed"} 1`,
		`confighub_sink_state{kind="rec",sink="a",state="applied"} 0`,
		`confighub_sink_entity_errors{kind="rec",sink="a"} 1`,
		`confighub_stream_generation{stream="default"} 2`,
	} {
		if !strings.Contains(text, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if err := eng.DeleteSink("a"); err != nil {
		t.Fatal(err)
	}
	if text := scrape(t, set); strings.Contains(text, `sink="a"`) {
		t.Errorf("series of the deleted sink remain")
	}
}

// scrape reads /metrics over HTTP from a real listener.
func scrape(t *testing.T, set *metrics.Set) string {
	t.Helper()
	srv, err := set.Listen("127.0.0.1:0", slogDiscard(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	code, b := harness.Get(t, http.DefaultClient, "http://"+srv.Addr()+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	return string(b)
}

// TestReasonCardinality: a plugin chooses its error codes freely; the
// reason label stays bounded per sink, and a code that is not a short
// code (an id, a message) is counted as "other".
func TestReasonCardinality(t *testing.T) {
	m, reg := newEngineMetrics(t)
	for i := range 100 {
		m.ApplyDone("p", "plugin", engine.ResultFailed, "code-"+strconv.Itoa(i), time.Millisecond, 1)
	}
	m.ApplyDone("p", "plugin", engine.ResultFailed, "Entity 42 failed: bad field", time.Millisecond, 1)
	m.ApplyDone("q", "plugin", engine.ResultFailed, "timeout", time.Millisecond, 1)
	text := gather(t, reg)
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "confighub_sink_applies_total{") && strings.Contains(l, `sink="p"}`) {
			n++
		}
	}
	if n != metrics.MaxReasonsPerSink+1 {
		t.Errorf("sink p has %d reason series, want %d codes + other:\n%s", n, metrics.MaxReasonsPerSink, text)
	}
	for _, line := range []string{
		`confighub_sink_applies_total{kind="plugin",reason="other",result="failed",sink="p"} 85`,
		`confighub_sink_applies_total{kind="plugin",reason="code-0",result="failed",sink="p"} 1`,
		`confighub_sink_applies_total{kind="plugin",reason="timeout",result="failed",sink="q"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("missing %s in:\n%s", line, text)
		}
	}
	// A deleted sink starts over.
	m.SinkRemoved("p", "plugin")
	m.ApplyDone("p", "plugin", engine.ResultFailed, "code-99", time.Millisecond, 1)
	if text := gather(t, reg); !strings.Contains(text, `reason="code-99",result="failed",sink="p"} 1`) {
		t.Errorf("a re-added sink's reasons are still capped:\n%s", text)
	}
}

// TestRestoredLastSuccess: a hub that restarts sets a sink's
// confighub_sink_last_success_timestamp_seconds from its restored record as
// the sink starts, before any apply (the same generation is skipped), so
// an alert on staleness sees no gap and no reset.
func TestRestoredLastSuccess(t *testing.T) {
	set, err := metrics.New()
	if err != nil {
		t.Fatal(err)
	}
	reg := sink.NewRegistry()
	if err := reg.Register("rec", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) {
		return &recSink{fn: func(*config.Config) error { return nil }}, nil
	}); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(reg, engine.WithMetrics(set.Engine))
	defer eng.Stop()
	raw := []byte(`{"_format_version":"3.0"}`)
	last := time.Unix(1700000000, 0)
	eng.Restore([]store.Applied{{Sink: "a", Stream: "default", Generation: 3, Hash: config.Hash(raw), Time: last}})
	if _, _, err := eng.PutSink(&confighubv1.Sink{Name: "a", Kind: "rec"}); err != nil {
		t.Fatal(err)
	}
	want := `confighub_sink_last_success_timestamp_seconds{kind="rec",sink="a"} 1.7e+09`
	if text := scrape(t, set); !strings.Contains(text, want) {
		t.Fatalf("/metrics right after the restart lacks %s:\n%s", want, grepLines(text, "last_success"))
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
