package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// writeDataPlanes lists the Kong data planes behind kong-dp sinks (hybrid
// mode): who they are, their connection, and the hash their last ping
// carried (what they run).
func writeDataPlanes(b *strings.Builder, sinks []*confighubv1.SinkStatus, now time.Time) {
	var dps []*confighubv1.SinkStatus
	for _, s := range sinks {
		if s.GetDataPlane() != nil {
			dps = append(dps, s)
		}
	}
	if len(dps) == 0 {
		return
	}
	b.WriteString("data planes:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SINK\tHOSTNAME\tVERSION\tADDRESS\tCONNECTION\tLAST PING\tRUNS\tSYNC\tLABELS")
	for _, s := range dps {
		dp := s.GetDataPlane()
		conn := "disconnected"
		if t := dp.GetDisconnectedSince(); !dp.GetConnected() && t != nil {
			conn += " " + roundDur(now.Sub(t.AsTime())) + " ago"
		}
		if t := dp.GetConnectedSince(); dp.GetConnected() && t != nil {
			conn = "connected " + roundDur(now.Sub(t.AsTime()))
		}
		ping := "-"
		if t := dp.GetLastPing(); t != nil {
			ping = roundDur(now.Sub(t.AsTime())) + " ago"
		}
		runs := short(dp.GetConfigHash())
		if runs == "" {
			runs = "-"
		}
		labels := make([]string, 0, len(dp.GetLabels()))
		for k, v := range dp.GetLabels() {
			labels = append(labels, k+":"+v)
		}
		sort.Strings(labels)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.GetSink(), dash(dp.GetHostname()), dash(dp.GetVersion()),
			dash(dp.GetAddress()), conn, ping, runs, dash(dp.GetSyncStatus()), dash(strings.Join(labels, ",")))
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
