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
//     (ids and names per entity type; two plugins without ids in one scope
//     collide on the id Kong derives from their cache key), references (a route's service, a
//     plugin's service/route/consumer/consumer_group, a target's upstream,
//     an SNI's certificate, a credential's consumer) and a handful of field
//     rules (a service needs a host or url, valid protocols, port and
//     timeout ranges, a route needs paths/hosts/methods/headers for http
//     protocols, sources/destinations/snis for tcp/tls/udp, or an
//     expression; known plugin names; a consumer needs username or
//     custom_id), and the config of the plugins kongplugins.go has
//     (unknown fields, types, one_of, required). 201 when loaded,
//     answering with the configuration (Kong answers with every loaded
//     entity: an answer about the size of the configuration); 304 when
//     check_hash is set and the hash is unchanged (TestFixturesAccepted,
//     TestFieldRules, TestConfigFieldAndForm, TestCheckHash304).
//   - 400 answers follow Kong 3.9.1 (kong/api/routes/config.lua,
//     kong/db/errors.lua declarative_config_flattened,
//     kong/db/schema/others/declarative_config.lua validate_references):
//     {"name":"invalid declarative configuration","code":14,"message",
//     "fields"} and, with flatten_errors, "flattened_errors": one entry per
//     entity with entity_type, entity_name, entity_id, entity_tags, the
//     entity and its field errors (a plugin config field at its dotted
//     path, "config.colour": "unknown field") and entity errors ("uniqueness
//     violation: 'services' entity with name set to 'a' already
//     declared"). Dangling references ("invalid reference 'service: x' (no
//     such entry in 'services')") are keyed by the entity's name or id,
//     which Kong's flattening cannot place: with flatten_errors those of a
//     collection given as a top-level list are dropped (Kong answers
//     fields {}, flattened_errors {}), those of a collection given only
//     nested stay in fields; without it, fields holds them all (the other
//     errors there keyed by entity type and name, where Kong nests them by
//     position in the input). An empty
//     flattened_errors is {} (Kong 3.9.1's cjson default; Kong/kong#14019,
//     after 3.9.1, makes it []). The message is
//     Kong's pretty print of fields. (TestBrokenReferences,
//     TestEntityErrorShapes)
//   - GET /status: configuration_hash (EmptyHash, 32 zeros, when empty) and
//     server counters. GET /: version (DefaultVersion), database "off"
//     (TestStatusRootAndRestart). GET /config: the loaded configuration.
//   - configuration_hash is ConfigHash(body): MD5 of the canonical JSON form
//     (decoded and re-encoded by encoding/json). Kong hashes its own
//     canonical form, so the values differ from a real Kong, but both are
//     independent of formatting and JSON versus YAML, which is what a client
//     relies on (TestHashIndependentOfFormat).
//   - Enterprise entities in KIC's output (consumer_groups,
//     consumer_group_consumers, degraphql_routes) and Enterprise plugins are
//     accepted as Kong Enterprise would; WithOSS answers like Kong OSS
//     ("unknown field", "plugin ... not enabled") (TestFixturesAccepted,
//     TestOSSRejectsEnterpriseFixtures).
//   - Not checked: the config of plugins kongplugins.go does not have,
//     regexes, certificates beyond a PEM marker, tag syntax, expressions.
//     Kong's generated ids (entities given without one get a
//     deterministic id in Kong's flattened entries) and the parent key
//     Kong adds to a nested entity's flattened entry are left out.
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
// # The entity API follows Kong 3.9 OSS (DB root) and Konnect (control planes)
//
// Facts transcribed from Kong 3.9.1 (kong/db/schema/entities/*.lua,
// typedefs.lua, entity.lua, init.lua's handle_missing_field, the
// credential daos.lua of key-auth, basic-auth, hmac-auth, jwt, acl and
// oauth2, and the schema.lua of the plugins listed in kongplugins.go);
// kongschema.go names them. GET / reports EntityVersion (3.9.1).
//
//   - GET /schemas/<entity> for services, routes, consumers, upstreams,
//     targets, certificates, snis, ca_certificates, plugins,
//     keyauth_credentials, basicauth_credentials, hmacauth_credentials,
//     jwt_secrets, acls, oauth2_credentials (Konnect also
//     mtls_auth_credentials) answers Kong's shape ({"fields":[{name:
//     {type, required, default, ...}}]}); /schemas/plugins/<name> the
//     plugin's subschema (protocols, config with its defaults); unknown
//     names answer Kong's 404 ("No entity named ...", "No plugin named
//     ..."). A Konnect control plane also answers /v1/schemas/json/<type>
//     with a JSON schema of the same facts. (TestEntitySchemas)
//   - Every write stores the entity as Kong does: defaults filled, null
//     for a field without one, records expanded with their own defaults,
//     sets deduplicated, auto fields generated (id, key-auth key, hmac and
//     jwt secrets, oauth2 client id/secret), created_at kept, updated_at
//     set (targets in milliseconds), a certificate answered with its SNI
//     names; reads return the stored entity. Unknown fields and missing
//     required fields are Kong's 400 schema violation. (TestEntityStoresDefaults)
//   - Unique fields and cache keys (plugins: name, route, service,
//     consumer; acls: consumer, group; targets: upstream, target) answer
//     409 {"code":5,"name":"unique constraint violation","message":
//     "UNIQUE violation detected on '{name=\"s\"}'","fields":{...}}; a
//     missing foreign entity 400 code 4; an unknown plugin name 400 "plugin
//     'x' not enabled". (TestEntityKongErrorBodies)
//   - Collections match Kong OSS 3.9 on the root: /tags and /tags/<tag>
//     list tagged entities; vaults, key-sets, keys, filter-chains are
//     (empty) collections; /workspaces answers 404 (Kong 3.9 OSS's
//     workspaces DAO says generate_admin_api = false and no route serves
//     it), as do the Enterprise /consumer_groups, /licenses, /partials,
//     /degraphql_routes and /mtls-auths. A Konnect control plane has the
//     Enterprise fields and collections: consumer groups are stored
//     (/consumer_groups, GET /consumer_groups/<name> with its consumers,
//     Konnect's /v1/consumer-groups answered as {"item": ...} and
//     /v1/consumers/<c>/groups/<g>/members), the others listed empty.
//     (TestEntityOSSCollections; diffsync's TestEveryFixtureResyncsWithoutWrites
//     syncs consumer-group-example-ee to a control plane)
//   - Router flavor: traditional_compatible (Kong 3.9's default) on the
//     root, so a route's expression and priority are unknown fields;
//     WithExpressionsRouter gives the "expressions" flavor. Konnect
//     control planes accept them, and give an expression route no
//     path_handling or regex_priority default (Konnect's one route schema
//     for both flavors; go-database-reconciler strips those defaults from
//     expression routes for Konnect). (TestEveryFixtureResyncsWithoutWrites
//     in internal/diffsync)
//
// Left out: entity_checks (conditional rules, at_least_one_of beyond
// consumers, mutually exclusive fields), field validators (between,
// patterns, hosts, paths, certificates, regexes), the shorthand fields
// other than a service's url, the config of bundled plugins not listed in
// kongplugins.go (their /schemas/plugins answer has a config record
// without fields and the config is stored as sent), consumer group
// plugins and overrides, degraphql routes (Konnect has them), vaults,
// keys and filter chains as stored entities, RBAC, workspaces,
// and Kong Enterprise's encryption of credentials (basic-auth passwords
// are hashed as Kong OSS does).
//
// # Fleets
//
// Many gateways in one process should share a Cache (WithCache): each
// distinct body is then parsed once and held once. cmd/kong-emulator
// --count N does that.
package kongemu
