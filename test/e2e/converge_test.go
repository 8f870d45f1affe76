package e2e

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/test/harness"
)

// scrape returns the text of a hub's /metrics.
func scrape(t *testing.T, maddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics: %v %s", err, resp.Status)
	}
	return string(b)
}

var convergedCountRE = regexp.MustCompile(`confighub_stream_convergence_seconds_count\{stream="default"\} (\d+)`)

// TestConvergenceSurvivesRestart: on the bolt store, a generation pushed
// and converged before a restart shows the same accept and converge times
// after it, and the restarted hub's convergence histogram has not observed
// it again (the downtime would count in ConfighubSlowConvergence).
func TestConvergenceSurvivesRestart(t *testing.T) {
	dataDir := t.TempDir()
	sinks := writeSinks(t, "- name: out\n  file:\n    path: out.json\n") // under <data-dir>/out
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	converged := func(h *harness.Hub) *confighubv1.GenerationStatus {
		cl := hubclient.New(harness.Dial(t, h.Addr))
		var g *confighubv1.GenerationStatus
		harness.Eventually(t, 20*time.Second, func() bool {
			st, err := cl.Hub.GetStatus(ctx, &confighubv1.GetStatusRequest{})
			if err != nil || len(st.GetGenerations()) == 0 {
				return false
			}
			g = st.GetGenerations()[len(st.GetGenerations())-1]
			return g.GetConvergeTime() != nil
		}, "generation converged")
		return g
	}

	h := harness.StartHub(t, bins, "--data-dir", dataDir, "--sinks", sinks)
	cl := hubclient.New(harness.Dial(t, h.Addr))
	res, err := cl.Push(ctx, hubclient.Push{Config: []byte(minimalConfig)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Wait(ctx, "", res.GetGeneration()); err != nil {
		t.Fatal(err)
	}
	before := converged(h)
	maddr := h.WaitOutput(t, metricsRE, 10*time.Second)
	if m := convergedCountRE.FindStringSubmatch(scrape(t, maddr)); m == nil || m[1] != "1" {
		t.Fatalf("before the restart the histogram counts %v, want 1", m)
	}
	if err := h.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	h = harness.StartHub(t, bins, "--data-dir", dataDir, "--sinks", sinks)
	after := converged(h)
	if after.GetGeneration() != before.GetGeneration() ||
		!after.GetAcceptTime().AsTime().Equal(before.GetAcceptTime().AsTime()) ||
		!after.GetConvergeTime().AsTime().Equal(before.GetConvergeTime().AsTime()) {
		t.Fatalf("after the restart generation %d accepted %v converged %v; before: generation %d accepted %v converged %v",
			after.GetGeneration(), after.GetAcceptTime().AsTime(), after.GetConvergeTime().AsTime(),
			before.GetGeneration(), before.GetAcceptTime().AsTime(), before.GetConvergeTime().AsTime())
	}
	maddr = h.WaitOutput(t, metricsRE, 10*time.Second)
	if m := convergedCountRE.FindStringSubmatch(scrape(t, maddr)); m != nil && m[1] != "0" {
		t.Fatalf("the restarted hub observed the convergence again: count %s", m[1])
	}
}
