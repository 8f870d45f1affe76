package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/test/harness"
)

// On replicas the bounds are hub-wide: what one replica created counts on
// the other once it followed it from etcd, so a new stream or sink past
// --max-streams / --max-sinks is refused by name on either.
func TestReplicasShareTheBounds(t *testing.T) {
	e := startEtcd(t)
	out := t.TempDir()
	type replica struct {
		hub   confighubv1.ConfigHubServiceClient
		admin confighubv1.SinkAdminServiceClient
	}
	var rs []replica
	for _, id := range []string{"r0", "r1"} {
		h := harness.StartHub(t, bins, "--store", "etcd", "--etcd-endpoints", e.Endpoints()[0], "--etcd-prefix", "/bounds",
			"--replica-id", id, "--lease-ttl", replicaTTL, "--file-sink-root", out, "--max-streams", "2", "--max-sinks", "1")
		conn := harness.Dial(t, h.Addr)
		rs = append(rs, replica{confighubv1.NewConfigHubServiceClient(conn), confighubv1.NewSinkAdminServiceClient(conn)})
	}
	ctx := context.Background()
	push := func(r replica, stream string) error {
		_, err := r.hub.PushConfig(ctx, &confighubv1.PushConfigRequest{Stream: stream, Config: []byte(`{"_format_version":"3.0"}`)})
		return err
	}
	refused := func(what string, err error, flag string) {
		t.Helper()
		if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "("+flag+")") {
			t.Errorf("%s: %v, want ResourceExhausted naming %s", what, err, flag)
		}
	}
	if err := push(rs[0], "a"); err != nil {
		t.Fatal(err)
	}
	if err := push(rs[1], "b"); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, func() bool {
		_, err := rs[0].hub.GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: "b"})
		return err == nil
	}, "r0 never followed stream b")
	refused("a third stream on r0", push(rs[0], "c"), "--max-streams")
	harness.Eventually(t, 10*time.Second, func() bool {
		_, err := rs[1].hub.GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: "a"})
		return err == nil
	}, "r1 never followed stream a")
	refused("a third stream on r1", push(rs[1], "c"), "--max-streams")

	put := func(r replica, name string) error {
		_, err := r.admin.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: &confighubv1.Sink{Name: name, Stream: "a",
			Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: filepath.Join(out, name+".json")}}}})
		return err
	}
	if err := put(rs[0], "f0"); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, func() bool {
		res, err := rs[1].admin.ListSinks(ctx, &confighubv1.ListSinksRequest{})
		return err == nil && len(res.GetSinks()) == 1
	}, "r1 never followed sink f0")
	refused("a second sink on r1", put(rs[1], "f1"), "--max-sinks")
}
