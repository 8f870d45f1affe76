package main

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

func TestStatusShowsDataPlanes(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &confighubv1.GetStatusResponse{Stream: "default", Sinks: []*confighubv1.SinkStatus{
		{Sink: "dp-a", Kind: "kong-dp", State: confighubv1.SinkState_SINK_STATE_APPLIED, DataPlane: &confighubv1.DataPlaneStatus{
			NodeId: "dp-a", Hostname: "host-a", Version: "3.9.1", Address: "10.0.0.7:41234", Connected: true,
			ConnectedSince: timestamppb.New(now.Add(-5 * time.Minute)), LastPing: timestamppb.New(now.Add(-3 * time.Second)),
			ConfigHash: "0123456789abcdef0123456789abcdef", SyncStatus: "normal", Labels: map[string]string{"stream": "default", "zone": "z1"},
		}},
		{Sink: "dp-b", Kind: "kong-dp", State: confighubv1.SinkState_SINK_STATE_APPLIED, DataPlane: &confighubv1.DataPlaneStatus{
			NodeId: "dp-b", Version: "3.10.0", DisconnectedSince: timestamppb.New(now.Add(-time.Hour)), SyncStatus: "kong_version_incompatible",
		}},
	}}
	out := renderStatus(st, now, 0)
	for _, want := range []string{"data planes:", "host-a", "3.9.1", "10.0.0.7:41234", "connected 5m0s", "3s ago", "0123456789ab", "stream:default,zone:z1",
		"disconnected 1h0m0s ago", "kong_version_incompatible"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
