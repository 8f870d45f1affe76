package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/confighub/confighub/test/harness"
)

// TestMakeDemoStopsCleanlyOnCtrlC runs `make demo` as a user does, on a
// pseudo-terminal (util-linux script): it pushes the repository's own
// kic-golden fixture, the three emulated gateways apply it, and Ctrl-C
// stops everything with exit 0: the terminal's SIGINT reaches make itself,
// which must not report "Error 130".
func TestMakeDemoStopsCleanlyOnCtrlC(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs util-linux script for a pseudo-terminal")
	}
	cmd := exec.Command(scriptBin, "-q", "-e", "-c", "make demo", "/dev/null")
	cmd.Dir = harness.RepoRoot()
	for _, kv := range os.Environ() {
		// A make running this test must not hand its jobserver to this one.
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DEMO_FAULTS=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out harness.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	converged := regexp.MustCompile(`applied by 3/3 sinks`)
	harness.Eventually(t, 3*time.Minute, func() bool { return converged.MatchString(out.String()) }, "the demo's gateways applied the fixture:\n%s", &out)
	if !strings.Contains(out.String(), "pushing httproute-example__default.yaml with confighubctl") {
		t.Errorf("the demo did not push the repository's fixture:\n%s", out.String())
	}
	if _, err := stdin.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "demo stopped") {
			t.Fatalf("make demo after Ctrl-C: %v (want exit 0)\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("make demo did not stop on Ctrl-C:\n%s", out.String())
	}
}
