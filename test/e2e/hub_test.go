package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/harness"
)

const minimalConfig = `{"_format_version":"3.0","services":[{"name":"svc","host":"example.com","routes":[{"name":"r","paths":["/"]}]}]}`

func writeSinks(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sinks.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGrpcurlTour drives a real hub with the real grpcurl: the services are
// listed and described, health answers, a push is acknowledged, status shows
// the file sink applying it, and a watch sees the push.
func TestGrpcurlTour(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	h := harness.StartHub(t, bins, "--sinks", writeSinks(t, "- name: out\n  file:\n    path: "+out+"\n"), "--file-sink-root", filepath.Dir(out))

	list, err := harness.Grpcurl(t, "-plaintext", h.Addr, "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"confighub.v1.ConfigHubService", "confighub.v1.SinkAdminService", "confighub.sink.v1.SinkPluginService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} {
		if !strings.Contains(list, svc) {
			t.Errorf("grpcurl list does not show %s:\n%s", svc, list)
		}
	}
	desc, err := harness.Grpcurl(t, "-plaintext", h.Addr, "describe", "confighub.v1.PushConfigRequest")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"stream", "config", "expected_generation", "labels"} {
		if !strings.Contains(desc, field) {
			t.Errorf("describe PushConfigRequest lacks %s:\n%s", field, desc)
		}
	}
	health, err := harness.Grpcurl(t, "-plaintext", h.Addr, "grpc.health.v1.Health/Check")
	if err != nil || !strings.Contains(health, "SERVING") {
		t.Fatalf("health: %q %v", health, err)
	}

	// A watch started before the push sees it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watch := exec.CommandContext(ctx, harness.GrpcurlPath(), "-plaintext", "-max-time", "20", "-d", `{"stream":"default"}`, h.Addr, "confighub.v1.ConfigHubService/WatchStatus")
	var watchOut harness.SyncBuffer
	watch.Stdout = &watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = watch.Wait() }()
	harness.Eventually(t, 10*time.Second, func() bool { return strings.Contains(watchOut.String(), "snapshot") }, "the watch's first snapshot")

	push, err := harness.GrpcurlStdin(t, strings.NewReader(`{"config":"`+b64(minimalConfig)+`"}`), "-plaintext", "-d", "@", h.Addr, "confighub.v1.ConfigHubService/PushConfig")
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Generation string `json:"generation"`
		Hash       string `json:"hash"`
	}
	if err := json.Unmarshal([]byte(push), &pr); err != nil {
		t.Fatalf("push answer %q: %v", push, err)
	}
	if pr.Generation != "1" || pr.Hash != config.Hash([]byte(minimalConfig)) {
		t.Fatalf("push answer: %+v, want generation 1 and hash %s", pr, config.Hash([]byte(minimalConfig)))
	}
	harness.Eventually(t, 20*time.Second, func() bool {
		st, err := harness.Grpcurl(t, "-plaintext", "-d", `{"stream":"default"}`, h.Addr, "confighub.v1.ConfigHubService/GetStatus")
		return err == nil && strings.Contains(st, "SINK_STATE_APPLIED") && strings.Contains(st, `"appliedGeneration": "1"`)
	}, "GetStatus shows sink out APPLIED at generation 1")
	got, err := os.ReadFile(out)
	if err != nil || string(got) != minimalConfig {
		t.Fatalf("file sink wrote %q (%v)", got, err)
	}
	harness.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(watchOut.String(), `"appliedGeneration": "1"`)
	}, "the watch sees the sink apply generation 1; got:\n%s", watchOut.String())
}

// TestBadInputErrors: bad requests get a clear gRPC error naming the problem.
func TestBadInputErrors(t *testing.T) {
	h := harness.StartHub(t, bins)
	cases := []struct {
		name, method, body, code, msg string
	}{
		{"empty config", "PushConfig", `{"config":""}`, "InvalidArgument", "config"},
		{"neither JSON nor YAML", "PushConfig", `{"config":"` + b64("\x00\x01 not: [a config") + `"}`, "InvalidArgument", "YAML"},
		{"not a mapping", "PushConfig", `{"config":"` + b64("just some words") + `"}`, "InvalidArgument", "mapping"},
		{"broken JSON", "PushConfig", `{"config":"` + b64(`{"_format_version":"3.0",`) + `"}`, "InvalidArgument", "not valid JSON"},
		{"no _format_version", "PushConfig", `{"config":"` + b64(`{"services":[]}`) + `"}`, "InvalidArgument", "_format_version"},
		{"unknown stream", "GetStatus", `{"stream":"nope"}`, "NotFound", `"nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := harness.Grpcurl(t, "-plaintext", "-d", c.body, h.Addr, "confighub.v1.ConfigHubService/"+c.method)
			if err == nil {
				t.Fatalf("want %s, got success", c.code)
			}
			if !strings.Contains(err.Error(), "Code: "+c.code) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("want code %s and a message naming %q, got: %v", c.code, c.msg, err)
			}
		})
	}
}

// TestMalformedSinksFileFailsStart: a bad sinks file stops the hub at start
// with a message naming the file and the problem.
func TestMalformedSinksFileFailsStart(t *testing.T) {
	for name, body := range map[string]string{
		"not-yaml":     "- name: [oops\n",
		"unknown-kind": "- name: x\n  kind: teleporter\n",
		"bad-field":    "- name: x\n  file: {path: /tmp/x, colour: red}\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := writeSinks(t, body)
			cmd := exec.Command(bins.Path("confighub"), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--sinks", p)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("hub started with a malformed sinks file:\n%s", out)
			}
			if !strings.Contains(string(out), p) {
				t.Fatalf("the error does not name the file %s:\n%s", p, out)
			}
		})
	}
	out, err := exec.Command(bins.Path("confighub"), "--no-such-flag").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no-such-flag") {
		t.Fatalf("an unknown flag must fail and be named: %v\n%s", err, out)
	}
}
