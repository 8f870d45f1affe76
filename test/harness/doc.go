// Package harness runs the hub's real binaries for end-to-end tests: it
// builds them once per test binary, starts a hub on a free loopback port
// (read back from its "confighub serving" log line), and drives it with the
// real grpcurl binary, each invocation appended to $CONFIGHUB_GRPCURL_LOG
// so `make test` can check the real grpcurl ran. It also reads the KIC
// golden fixtures from any package (Fixture, Fixtures), records logs
// (NewLogRecorder fails a test whose line carries a key twice) and reads
// the hub's HTTP endpoints (Get).
//
//	var bins *harness.Binaries
//	func TestMain(m *testing.M) { bins = harness.MustBuild(m, "confighub"); ... }
//	h := harness.StartHub(t, bins, "--sinks", file)
//	out := harness.Grpcurl(t, "-plaintext", h.Addr, "list")
//
// Guarantees: a missing fixture fails, never skips (TestFixturesFromAnyPackage,
// TestFixturesWalkPastNestedModules, TestMissingFixturesFail); duplicate log
// keys are found (TestLogRecorderFindsDuplicateKeys).
package harness
