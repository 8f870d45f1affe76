package e2e

import (
	"os"
	"testing"

	"github.com/confighub/confighub/test/harness"
)

// bins holds every binary the e2e tests run, built once.
var bins *harness.Binaries

func TestMain(m *testing.M) {
	bins = harness.MustBuild(e2eBinaries...)
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// e2eBinaries are the commands the e2e tests start; a test file that needs
// another one adds it in an init function.
var e2eBinaries = []string{"cmd/confighub"}
