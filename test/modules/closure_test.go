package modules

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confighub/confighub/test/harness"
)

// forbidden are the server's heavy dependencies: a controller that imports
// only the client and the API must not inherit any of them.
var forbidden = []string{
	"go.etcd.io/",
	"github.com/kong/",
	"github.com/prometheus/",
	"github.com/confighub/confighub/internal",
	"github.com/confighub/confighub/config",
	"buf.build/go/protovalidate", // the runtime validator; the generated annotations are allowed
	"github.com/google/cel-go",
}

// TestClientModuleClosure builds a controller-shaped module that imports only
// the Go client and the API, and checks what its build pulls in.
func TestClientModuleClosure(t *testing.T) {
	api := filepath.Join(harness.RepoRoot(), "api")
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/controller\n\ngo 1.26.8\n\n"+
		"require github.com/confighub/confighub/api v0.0.0\n\n"+
		"replace github.com/confighub/confighub/api => "+api+"\n")
	sum, err := os.ReadFile(filepath.Join(api, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	write("main.go", `package main

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
)

func main() {
	cc, _ := grpc.NewClient("127.0.0.1:7070", grpc.WithTransportCredentials(insecure.NewCredentials()))
	_ = hubclient.New(cc)
	_ = confighubv1.SinkState_SINK_STATE_APPLIED
}
`)
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("build", "-o", os.DevNull, ".")
	deps := goCmd("list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	var bad []string
	for _, p := range strings.Fields(deps) {
		for _, f := range forbidden {
			if strings.HasPrefix(p, f) {
				bad = append(bad, p)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("a module importing only the client and the API depends on: %s", strings.Join(bad, ", "))
	}
	if !strings.Contains(deps, "github.com/confighub/confighub/api/hubclient") {
		t.Errorf("go list -deps did not list the client: the test checks nothing\n%s", deps)
	}
	// The API module's own requirements are what every importer's go.mod
	// resolves: no server dependency may appear there either.
	mods := goCmd("list", "-m", "-f", "{{.Path}}", "all")
	for _, f := range forbidden {
		if strings.Contains(mods, f) {
			t.Errorf("the module graph of a client-only importer holds %s:\n%s", f, mods)
		}
	}
}
