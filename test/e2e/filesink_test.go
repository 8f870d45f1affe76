package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/test/harness"
)

// TestFileSinkConfined: file sinks write under --file-sink-root only. A
// path that leaves it (../, an absolute path elsewhere, a link out of it)
// fails the start from a sinks file and is InvalidArgument at PutSink, and
// the file outside is never written; a path into folders that do not
// exist yet is written on the first push.
func TestFileSinkConfined(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "out")
	victim := filepath.Join(base, "victim.json")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	escapes := []string{"../victim.json", victim, "link/victim.json"}
	for _, p := range escapes {
		sinks := writeSinks(t, "- name: x\n  file: {path: "+p+"}\n")
		out, err := exec.Command(bins.Path("confighub"), "--listen", "127.0.0.1:0", "--metrics-listen", "", "--data-dir", t.TempDir(),
			"--file-sink-root", root, "--sinks", sinks).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "file sink root") {
			t.Errorf("path %s in a sinks file: want a failed start naming the file sink root, got %v:\n%s", p, err, out)
		}
	}

	h := harness.StartHub(t, bins, "--file-sink-root", root, "--sinks", writeSinks(t, "- name: nested\n  file: {path: a/b/kong.json}\n"))
	for _, p := range escapes {
		_, err := harness.Grpcurl(t, "-plaintext", "-d", `{"sink":{"name":"x","file":{"path":"`+p+`"}}}`, h.Addr, "confighub.v1.SinkAdminService/PutSink")
		if err == nil || !strings.Contains(err.Error(), "InvalidArgument") || !strings.Contains(err.Error(), "file sink root") {
			t.Errorf("PutSink with path %s: want InvalidArgument naming the file sink root, got %v", p, err)
		}
	}
	if _, err := harness.GrpcurlStdin(t, strings.NewReader(`{"config":"`+b64(minimalConfig)+`"}`), "-plaintext", "-d", "@", h.Addr, "confighub.v1.ConfigHubService/PushConfig"); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(root, "a", "b", "kong.json")
	harness.Eventually(t, 20*time.Second, func() bool {
		got, err := os.ReadFile(nested)
		return err == nil && string(got) == minimalConfig
	}, "the sink into missing folders writes %s", nested)
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Fatalf("the file outside the root was overwritten: %q", got)
	}
}
