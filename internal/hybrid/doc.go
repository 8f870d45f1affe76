// Package hybrid is the cluster listener: Kong data planes in hybrid mode
// dial it as Kong 3.9's control plane (sync v1, /v1/outlet); each is a
// kong-dp sink named by its node_id, in the stream of its label stream:NAME.
// Apply writes the stream's reconfigure frame (gzip'd once per generation,
// shared by every data plane) and waits for a ping with its hash.
//
// Guarantees (hybrid_test.go, against test/kongemu/dataplane, not Kong):
//   - Refusals (no or wrong certificate, 400 without node_id or node_version, a bad or oversized basic_info) are logged with the address; pki verifies against the CA (TestRefusals, TestPKIMode).
//   - TLS handshakes in flight are bounded; one that waits too long is refused (TestHandshakesInFlightAreBounded).
//   - Status shows each data plane; one compression per generation; APPLIED on the ping (TestHappyPath, TestEmptyConfigIsReportedAsZeros).
//   - Kong's version rule (TestVersionCompatibility); a generation with plugins a data plane lacks is not sent to it (TestMissingPluginIsNotSent).
//   - A frame over the max payload is not sent: too-large (TestPayloadOverTheLimit).
//   - "Did not load" past the apply bound, error frames as entity errors (TestConfigTheDataPlaneDoesNotLoad, TestErrorFramesBecomeEntityErrors).
//   - Disconnected, back with its sink, purged after the delay (TestDisconnectReconnectAndPurge); a sink put before its data plane connects waits for it (TestSinkPutBeforeItsDataPlaneConnects).
//   - Replicas: a sink run elsewhere closes its connection here and is not purged here (TestDataPlaneRunElsewhereIsClosed, TestPurgeOnlyWhereTheSinkRuns).
//   - /v2/outlet answers the RPC hello with no capabilities (TestV2OutletAnswersHelloWithNoCapabilities).
package hybrid
