// Package emulator is a Kong Admin API emulator for tests. It is NOT Kong:
// no real Kong can run on the test machines, so this package answers the
// Admin API calls confighub makes, following Kong's documented Admin API
// behaviour (the facts are listed below) and Kong 3.x's
// kong/api/routes/config.lua.
//
// # DB-less gateway (Gateway, this package's gateway*.go, faults.go, declarative.go)
//
//   - POST /config (query check_hash, flatten_errors; body JSON or YAML with
//     _format_version, or a "config" field holding it as a string, in a JSON
//     body or a form): parses the declarative configuration, checks
//     _format_version, known collections and fields, ids (UUIDs), uniqueness
//     (ids and names per entity type, a plugin per name and scope), references (a route's service, a
//     plugin's service/route/consumer/consumer_group, a target's upstream,
//     an SNI's certificate, a credential's consumer) and a handful of field
//     rules (a service needs a host or url, valid protocols, port and
//     timeout ranges, a route needs paths/hosts/methods/headers for http
//     protocols, sources/destinations/snis for tcp/tls/udp, or an
//     expression; known plugin names; a consumer needs username or
//     custom_id). 201 when loaded, answering with the configuration (Kong
//     answers with every loaded entity: an answer about the size of the
//     configuration); 304 when check_hash is set and the hash is
//     unchanged; 400 with Kong's body {"name":"invalid declarative
//     configuration","code":14,"message","fields","flattened_errors"} where
//     each flattened error carries entity_type, entity_name, entity_id,
//     entity_tags, the entity and its field/entity errors.
//   - GET /status: configuration_hash (EmptyHash, 32 zeros, when empty) and
//     server counters. GET /: version (DefaultVersion), database "off".
//     GET /config: the loaded configuration.
//   - configuration_hash is ConfigHash(body): MD5 of the canonical JSON form
//     (decoded and re-encoded by encoding/json). Kong hashes its own
//     canonical form, so the values differ from a real Kong, but both are
//     independent of formatting and JSON versus YAML, which is what a client
//     relies on.
//   - Enterprise entities in KIC's output (consumer_groups,
//     consumer_group_consumers, degraphql_routes) and Enterprise plugins are
//     accepted as Kong Enterprise would; WithOSS answers like Kong OSS
//     ("unknown field", "plugin ... not enabled").
//   - Not checked: plugin config schemas, regexes, certificates beyond a
//     PEM marker, tag syntax, expressions.
//
// # Faults and the request log
//
// Go API (SetLatency, Hang/Release, DropNext, Script/ScriptConfig with Step
// {Status, RetryAfter, Body, Drop, Hang, Latency}, SetBodyLimit, Restart,
// ClearFaults) and the same over HTTP under /_emulator/ (POST/DELETE
// /_emulator/faults with a FaultSpec, POST /_emulator/release, POST
// /_emulator/restart, GET /_emulator/state, GET /_emulator/requests), so
// cmd/kong-emulator can be scripted with curl. Faults apply to every Admin
// API request (control calls are neither faulted nor logged). Every Admin
// API request is recorded (Requests, Count, Pushes) with method, path,
// query, status (0 when dropped), time (from WithClock) and size, as soon
// as its status is known: a client that got its answer (or lost its
// connection) finds the request in the log. Wait and
// WaitHanging block on an observable condition, so tests need no sleeps.
//
// # Adding the entity Admin API (DB mode and Konnect; issue 6)
//
// The entity API lives in entities*.go (EntityAPI, an http.Handler with its
// own store and counts). It is put behind a Gateway, sharing the gateway's
// fault injection and request log, with the WithRoutes hook:
//
//	api := emulator.NewEntityAPI()
//	gw := emulator.New(emulator.WithDBMode(), emulator.WithRoutes(api.Routes))
//
// The patterns registered by the gateway itself are "POST /config",
// "GET /config", "GET /status" and "GET /{$}"; anything else on the mux is
// free for the entity API. WithDBMode makes POST /config answer 400 as a
// Kong with a database does and drops configuration_hash from /status.
//
// # Fleets
//
// Many gateways in one process should share a Cache (WithCache): each
// distinct body is then parsed once and held once. cmd/kong-emulator
// --count N does that.
package emulator
