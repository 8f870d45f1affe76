package builtin

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

// TestLogLinesNameEachAttributeOnce: the engine names a sink and its kind
// on every line of its logger, so the built-in kinds (kong with an
// insecure-TLS warning, kong-db syncing entities at debug, file) never
// repeat sink=, kind= or any other key on a line (such as "sink=gw
// kind=kong sink=gw kind=kong", or kind= twice on kong-db's "entity
// synced").
func TestLogLinesNameEachAttributeOnce(t *testing.T) {
	rec := harness.NewLogRecorder(t, slog.LevelDebug)
	reg := sink.NewRegistry()
	if err := Register(reg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	gw := kongemu.New()
	gwURL, err := gw.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	db := httptest.NewServer(kongemu.NewEntityAPI())
	defer db.Close()
	e := engine.New(reg, engine.WithLogger(rec.Logger()))
	defer e.Stop()
	insecure := &confighubv1.TLS{InsecureSkipVerify: true}
	for _, s := range []*confighubv1.Sink{
		{Name: "gw", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Address: gwURL, Tls: insecure}}},
		{Name: "db", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{Address: db.URL, Tls: insecure}}},
		{Name: "out", Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: "kong.json"}}},
	} {
		if _, _, err := e.PutSink(s); err != nil {
			t.Fatal(err)
		}
	}
	raw := harness.Fixture(t, "httproute-example__default.yaml")
	ck, err := config.Check(raw, config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	e.Publish(config.New("default", 1, config.Hash(raw), ck.Format, raw, ck.JSON, nil, time.Now()))
	harness.Eventually(t, 30*time.Second, func() bool {
		st, _ := e.View().Snapshot("default")
		n := 0
		for _, s := range st.GetSinks() {
			if s.GetAppliedGeneration() == 1 {
				n++
			}
		}
		return n == 3
	}, "every sink applied generation 1")
	lines := strings.Join(rec.Lines(), "\n")
	for _, want := range []string{"WARN TLS verification of the server is disabled", "DEBUG entity synced sink=db kind=kong-db action="} {
		if !strings.Contains(lines, want) {
			t.Errorf("no line %q: the test no longer covers the kinds' own logging\n%s", want, lines)
		}
	}
	// The recorder fails the test at its end for any line with a key twice.
}
