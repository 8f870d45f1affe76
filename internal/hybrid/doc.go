// Package hybrid is the hub's cluster listener: Kong data planes in hybrid
// mode dial it as they would dial Kong's control plane (sync v1,
// kong/clustering/control_plane.lua in Kong 3.9), and each one is a sink
// of kind kong-dp in the engine, named by its node_id, in the stream its
// label stream:NAME picks (default otherwise).
//
// Data flow: the engine offers a sink a generation; the data plane's
// Apply takes the stream's reconfigure frame (JSON, gzip'd once per
// generation and stream, shared as one prepared WebSocket frame by every
// data plane of the stream), writes it, and waits until a ping carries the
// hash it was sent with. Status shows the data plane's connection
// (data_plane in SinkStatus).
//
// Guarantees, each with its test (hybrid_test.go, against the data plane
// emulator test/kongemu/dataplane; no real Kong data plane runs here):
//
//   - TLS only, HTTP/1.1, /v1/outlet without subprotocol or extension; a
//     client without a certificate or with another than the cluster
//     certificate (shared) is refused in the handshake, a request without
//     node_id or node_version answered 400, a first frame that is not a
//     binary basic_info with a plugins list, or over the max payload,
//     closed; every refusal logged with the address (TestRefusals).
//   - A connected data plane is a kong-dp sink with its hostname, version,
//     labels, address, connected since, last ping and running hash in
//     status; its label stream:NAME picks the stream; one generation is
//     compressed once for every data plane of its stream; APPLIED when a
//     ping carries the sent hash (TestHappyPath); an empty configuration
//     is applied when the data plane pings 32 zeros
//     (TestEmptyConfigIsReportedAsZeros).
//   - Kong's version rule: another major or a newer minor than the target
//     is refused and shown as kong_version_incompatible
//     (TestVersionCompatibility); a generation that configures plugins a
//     data plane lacks is not sent to it, which fails naming them, while
//     the others get it (TestMissingPluginIsNotSent).
//   - A frame over the max payload is not sent: too-large naming both sizes
//     (TestPayloadOverTheLimit).
//   - A data plane that still pings another hash past the apply bound
//     fails the generation ("did not load generation N; it still runs X")
//     (TestConfigTheDataPlaneDoesNotLoad); an error frame (Konnect mode)
//     fails it with its entity errors, parsed as the kong sink parses
//     Kong's 400 (TestErrorFramesBecomeEntityErrors).
//   - A data plane that disconnects shows disconnected (unreachable); one
//     that comes back takes its sink back and is sent the current
//     generation; one away for the purge delay is forgotten
//     (TestDisconnectReconnectAndPurge).
//   - /v2/outlet answers the RPC hello with no capabilities, so a data
//     plane with RPC sync on falls back to /v1/outlet
//     (TestV2OutletAnswersHelloWithNoCapabilities).
package hybrid
