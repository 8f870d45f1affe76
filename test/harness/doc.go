// Package harness runs the hub's real binaries for end-to-end tests: it
// builds them once per test binary, starts a hub process on a free loopback
// port (read back from the hub's own "confighub serving" log line, so there
// is no port race), and drives it with the real grpcurl binary.
//
// Every grpcurl invocation is appended to the file named by
// $CONFIGHUB_GRPCURL_LOG together with the module path and version the binary was built from, so
// `make test` can check that the e2e tests really used the real grpcurl.
//
// Fixtures: Fixture(t, name), FixturePath(t, name) and Fixtures(t) read the
// 58 Kong Ingress Controller golden configurations in testdata/kic-golden
// from any package of the repository (the walk up from the working
// directory stops at the go.mod of the root module, past nested modules
// such as api/). A missing folder, file or module root fails the test,
// never skips it (TestFixturesFromAnyPackage,
// TestFixturesWalkPastNestedModules, TestMissingFixturesFail).
//
// Logs: NewLogRecorder is a slog.Handler that keeps every line and fails
// the test at its end if a line carried a key twice, counting the
// logger's own attributes and groups (TestLogRecorderFindsDuplicateKeys).
//
// HTTP: Get reads an HTTP endpoint of the hub (/metrics, the status page's
// API, the profiles) with an optional bearer token, bounded to 30 s.
//
// Usage from a test package:
//
//	var bins *harness.Binaries
//	func TestMain(m *testing.M) { bins = harness.MustBuild(m, "confighub"); ... }
//	h := harness.StartHub(t, bins, "--sinks", file)
//	out := harness.Grpcurl(t, "-plaintext", h.Addr, "list")
package harness
