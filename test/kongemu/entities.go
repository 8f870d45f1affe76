package kongemu

// This file is the entity half of the emulator: the Kong Admin API of a
// gateway with a database (DB mode, Kong 3.9 OSS) and of a Konnect control
// plane, as go-database-reconciler v1.31.6 (with go-kong v0.78.0) uses
// them. Entities are stored as Kong stores them (kongschema.go): defaults
// filled, auto fields generated, timestamps set, unknown fields refused;
// foreign keys, unique keys and pagination answer with Kong's bodies.

import (
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Kong's basic-auth hashing, emulated
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KonnectPrefix is the path prefix of a Konnect control plane's Admin API:
// <address>/kic/api/control-planes/<id>/... .
const KonnectPrefix = "/kic/api/control-planes/"

// EntityVersion is the Kong version GET / reports.
const EntityVersion = "3.9.1"

// entityCollections are the collections the emulator stores.
var entityCollections = []string{
	"services", "routes", "plugins", "consumers", "upstreams", "targets",
	"certificates", "snis", "ca_certificates",
	"acls", "basic-auths", "hmac-auths", "jwts", "key-auths", "mtls-auths", "oauth2",
	"consumer_groups", "key-sets", "keys",
}

// entityEmpty are collections listed as always empty (entities the
// reconciler dumps but a sync of KIC's output does not write).
var entityEmpty = map[string]bool{
	"vaults":   true,
	"partials": true, "filter-chains": true, "licenses": true, "degraphql_routes": true,
}

// enterpriseCollections are Kong Enterprise (and Konnect) collections: the
// DB-mode root, a Kong OSS 3.9, answers 404 for them (kong/api/init.lua
// generates endpoints only for the DAOs it has).
var enterpriseCollections = map[string]bool{
	"consumer_groups": true, "licenses": true, "partials": true, "degraphql_routes": true,
	"mtls-auths": true,
}

// entityNested maps "<parent>/<sub path>" to the child collection.
var entityNested = map[string]string{
	"consumers/key-auth":   "key-auths",
	"consumers/key-auths":  "key-auths",
	"consumers/basic-auth": "basic-auths",
	"consumers/hmac-auth":  "hmac-auths",
	"consumers/jwt":        "jwts",
	"consumers/acls":       "acls",
	"consumers/oauth2":     "oauth2",
	"consumers/mtls-auth":  "mtls-auths",
	"consumers/plugins":    "plugins",
	"upstreams/targets":    "targets",
	"services/routes":      "routes",
	"services/plugins":     "plugins",
	"routes/plugins":       "plugins",
	"certificates/snis":    "snis",
	"key-sets/keys":        "keys",
}

// entityForeign maps a foreign-key field to the collection it references.
var entityForeign = map[string]string{
	"service": "services", "route": "routes", "consumer": "consumers",
	"upstream": "upstreams", "certificate": "certificates", "set": "key-sets",
}

// parentField is the foreign-key field a child holds for a parent collection.
var parentField = map[string]string{
	"services": "service", "routes": "route", "consumers": "consumer",
	"upstreams": "upstream", "certificates": "certificate", "key-sets": "set",
}

// entityNameField is the field that identifies an entity in a path besides
// its id.
var entityNameField = map[string]string{
	"services": "name", "routes": "name", "consumers": "username",
	"upstreams": "name", "snis": "name", "key-auths": "key", "consumer_groups": "name",
	"basic-auths": "username", "hmac-auths": "username", "jwts": "key",
	"oauth2": "client_id", "plugins": "instance_name", "key-sets": "name", "keys": "name",
}

// EntityFault replaces the answer to one request of the entity API.
type EntityFault struct {
	// Status is the HTTP status to answer with (e.g. 429, 503).
	Status int
	// RetryAfter sets the Retry-After header (whole seconds, rounded up).
	RetryAfter time.Duration
	// Message is the "message" of the JSON error body.
	Message string
	// WritesOnly makes the fault match only PUT, POST, PATCH and DELETE.
	WritesOnly bool
	// Collection, when set, makes the fault match only requests of that
	// collection (e.g. "services", or "targets" for
	// /upstreams/<id>/targets).
	Collection string
	// Drop closes the connection without an answer.
	Drop bool
}

type entityReject struct {
	status  int
	message string
}

type entityScope struct {
	cols map[string]map[string]map[string]any
	// members are the consumers of each consumer group (Konnect):
	// group id -> consumer id.
	members map[string]map[string]bool
	// unique indexes the unique keys of each collection: key -> id.
	unique map[string]map[string]string
	// expires is when each entity written with a ttl expires, by id
	// (key-auth credentials, a ttl entity: kong/plugins/key-auth/daos.lua
	// ttl = true). Reads answer the whole seconds left in "ttl", rounded
	// down as Kong's postgres strategy does; expired entities are gone.
	expires map[string]time.Time
	now     func() time.Time
}

// EntityAPI is the emulated entity Admin API. It serves DB mode at "/" and
// any Konnect control plane under KonnectPrefix+"<id>"; each control plane
// and the DB-mode root hold separate entities. It is safe for concurrent
// use. The zero value is not usable; use NewEntityAPI.
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
//     jwt_secrets, acls, oauth2_credentials, key_sets, keys, tags (Konnect
//     also mtls_auth_credentials) answers Kong's shape ({"fields":[{name:
//     {type, required, default, ...}}]}); /schemas/plugins/<name> the
//     plugin's subschema (protocols, config with its defaults); unknown
//     names answer Kong's 404 ("No entity named ...", "No plugin named
//     ..."). A Konnect control plane also answers /v1/schemas/json/<type>
//     with a JSON schema of the same facts. POST /schemas/<entity>/validate
//     and /schemas/plugins/validate check an entity as a write does,
//     without the foreign and unique keys (kong/api/routes/kong.lua).
//     (TestEntitySchemas)
//   - Every write stores the entity as Kong does: defaults filled, null
//     for a field without one, records expanded with their own defaults,
//     sets deduplicated, auto fields generated (id, key-auth key, hmac and
//     jwt secrets, oauth2 client id/secret), created_at kept, updated_at
//     set (targets in milliseconds), a certificate answered with its SNI
//     names, a ttl'd key-auth with the seconds it has left (expired ones
//     are gone); reads return the stored entity. Unknown fields, missing
//     required fields, ids and foreign keys that are not UUIDs, and the
//     rules a declarative configuration has (checkRules: a route's
//     matchers and regex paths, certificates that parse and match their
//     key, CA certificates, keys' jwk or pem) are Kong's 400 schema
//     violation, checked before the foreign and unique keys.
//     (TestEntityStoresDefaults, TestEntityTTL, TestEntityPluginShorthands)
//   - Unique fields and cache keys (plugins: name, route, service,
//     consumer; acls: consumer, group; targets: upstream, target) answer
//     409 {"code":5,"name":"unique constraint violation","message":
//     "UNIQUE violation detected on '{name=\"s\"}'","fields":{...}}; a
//     missing foreign entity 400 code 4; an unknown plugin name 400 "plugin
//     'x' not enabled". (TestEntityKongErrorBodies)
//   - Collections match Kong OSS 3.9 on the root: /tags and /tags/<tag>
//     list tagged entities; key-sets and keys are stored, vaults and
//     filter-chains (empty) collections; /consumers?custom_id=,
//     /consumers/<c>/acls/<group>, /<entity>/<key>/<foreign key> and
//     /upstreams/<u>/health (no balancer: IP targets HEALTHCHECKS_OFF,
//     names DNS_ERROR) answer as Kong's routes do; /workspaces answers 404 (Kong 3.9 OSS's
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
// Left out: the entity_checks and field validators (between, patterns,
// hosts, paths) checkRules does not have, the shorthand fields other than
// a service's url and rate-limiting's redis ones, the config of bundled plugins not listed in
// kongplugins.go (their /schemas/plugins answer has a config record
// without fields and the config is stored as sent), consumer group
// plugins and overrides, degraphql routes (Konnect has them), vaults
// and filter chains as stored entities, RBAC, workspaces,
// and Kong Enterprise's encryption of credentials (basic-auth passwords
// are hashed as Kong OSS does).
type EntityAPI struct {
	mu      sync.Mutex
	scopes  map[string]*entityScope
	counts  map[string]int
	writes  []string
	faults  []EntityFault
	latency time.Duration
	hang    chan struct{}
	rejects map[string]entityReject
	now     func() time.Time
	// expressions: the DB-mode root has router_flavor "expressions".
	expressions bool
}

var _ http.Handler = (*EntityAPI)(nil)

// EntityOption configures an EntityAPI.
type EntityOption func(*EntityAPI)

// WithExpressionsRouter makes the DB-mode root a Kong whose router_flavor
// is "expressions": routes then have the expression and priority fields
// (Konnect control planes always have them). The default is Kong 3.9's
// "traditional_compatible", which refuses them as unknown fields.
func WithExpressionsRouter() EntityOption { return func(a *EntityAPI) { a.expressions = true } }

// WithEntityClock sets the clock of created_at/updated_at (default: the
// system clock).
func WithEntityClock(now func() time.Time) EntityOption { return func(a *EntityAPI) { a.now = now } }

// NewEntityAPI returns an empty entity API.
func NewEntityAPI(opts ...EntityOption) *EntityAPI {
	a := &EntityAPI{
		scopes:  map[string]*entityScope{},
		counts:  map[string]int{},
		rejects: map[string]entityReject{},
		now:     time.Now,
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Routes registers the entity API on a Gateway's mux; pass it to
// WithRoutes, so the entity API shares the gateway's fault injection and
// request log:
//
//	api := emulator.NewEntityAPI()
//	gw := emulator.New(emulator.WithDBMode(), emulator.WithRoutes(api.Routes))
//
// GET / stays the gateway's (it reports the version the reconciler reads).
func (a *EntityAPI) Routes(_ *Gateway, mux *http.ServeMux) {
	mux.Handle(KonnectPrefix, a)
	mux.Handle("/schemas/", a)
	mux.Handle("/v1/schemas/", a)
	mux.Handle("/tags", a)
	mux.Handle("/tags/", a)
	mux.Handle("/workspaces", a)
	mux.Handle("/workspaces/", a)
	for _, c := range entityCollections {
		mux.Handle("/"+c, a)
		mux.Handle("/"+c+"/", a)
	}
	for c := range entityEmpty {
		mux.Handle("/"+c, a)
		mux.Handle("/"+c+"/", a)
	}
}

// PushFaults queues faults; each matching request consumes the first one.
func (a *EntityAPI) PushFaults(f ...EntityFault) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = append(a.faults, f...)
}

// PendingFaults is how many queued faults no request has consumed yet.
func (a *EntityAPI) PendingFaults() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.faults)
}

// SetLatency delays every answer by d (0 = none).
func (a *EntityAPI) SetLatency(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.latency = d
}

// Hang makes every request block until release is called or its client
// gives up. release is idempotent.
func (a *EntityAPI) Hang() (release func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	a.hang = ch
	a.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			if a.hang == ch {
				a.hang = nil
			}
			a.mu.Unlock()
			close(ch)
		})
	}
}

// RejectEntity makes every write of the entity of collection named name
// (its name, username or id) fail with status and message, as Kong does for
// a schema violation.
func (a *EntityAPI) RejectEntity(collection, name string, status int, message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rejects[collection+"/"+name] = entityReject{status: status, message: message}
}

// Counts returns the number of requests by "METHOD collection" (e.g.
// "PUT routes", "GET services", "GET /" for the root, "GET schemas").
func (a *EntityAPI) Counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.counts))
	for k, v := range a.counts {
		out[k] = v
	}
	return out
}

// Writes returns the write requests (PUT, POST, PATCH, DELETE) received, as
// "METHOD path", in arrival order.
func (a *EntityAPI) Writes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.writes...)
}

// ResetCounts clears Counts and Writes.
func (a *EntityAPI) ResetCounts() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts = map[string]int{}
	a.writes = nil
}

// Entities returns a copy of the entities of collection, sorted by id, in
// the DB-mode root (controlPlane "") or a Konnect control plane.
func (a *EntityAPI) Entities(controlPlane, collection string) []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.scopes[controlPlane]
	if s == nil {
		return nil
	}
	return deepCopyList(sortedByID(s.cols[collection]))
}

// Len is the number of entities of every collection of a scope.
func (a *EntityAPI) Len(controlPlane string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.scopes[controlPlane]
	if s == nil {
		return 0
	}
	n := 0
	for _, c := range s.cols {
		n += len(c)
	}
	return n
}

func (a *EntityAPI) scope(cp string) *entityScope {
	s := a.scopes[cp]
	if s == nil {
		s = &entityScope{cols: map[string]map[string]map[string]any{}, unique: map[string]map[string]string{},
			members: map[string]map[string]bool{}, expires: map[string]time.Time{}, now: a.now}
		for _, c := range entityCollections {
			s.cols[c] = map[string]map[string]any{}
			s.unique[c] = map[string]string{}
		}
		a.scopes[cp] = s
	}
	return s
}

// entityRequest is one parsed request path.
type entityRequest struct {
	cp         string
	collection string // child collection
	key        string // id or name, "" for the collection
	parentCol  string
	parentKey  string
	special    string // "root", "plugin-schema", "schema", "konnect-schema", "validate", "empty", "tags", "member", "unknown"
	// konnectItem: Konnect's /v1/consumer-groups, answered as {"item": ...}.
	konnectItem bool
	pluginName  string
	schemaName  string
	// health: GET /upstreams/<u>/health, the upstream's targets with
	// their health.
	health bool
	// foreign is the foreign-key field of /<collection>/<key>/<field>
	// (e.g. /routes/<r>/service): the entity it references.
	foreign string
}

func parseEntityPath(p string) entityRequest {
	var r entityRequest
	if strings.HasPrefix(p, KonnectPrefix) {
		rest := strings.TrimPrefix(p, KonnectPrefix)
		cp, after, _ := strings.Cut(rest, "/")
		r.cp = cp
		p = "/" + after
	}
	segs := strings.FieldsFunc(p, func(c rune) bool { return c == '/' })
	switch {
	case len(segs) == 0:
		r.special = "root"
	case segs[0] == "schemas" && len(segs) == 3 && segs[2] == "validate":
		// POST /schemas/<entity>/validate, /schemas/plugins/validate
		r.special, r.schemaName = "validate", segs[1]
	case segs[0] == "schemas" && len(segs) == 3 && segs[1] == "plugins":
		r.special, r.pluginName = "plugin-schema", segs[2]
	case segs[0] == "schemas" && len(segs) == 2:
		r.special, r.schemaName = "schema", segs[1]
	case segs[0] == "v1" && len(segs) == 4 && segs[1] == "schemas" && segs[2] == "json":
		r.special, r.schemaName = "konnect-schema", segs[3]
	case r.cp != "" && segs[0] == "v1" && len(segs) >= 2 && len(segs) <= 3 && segs[1] == "consumer-groups":
		// Konnect's consumer group API (go-database-reconciler's
		// pkg/konnect/consumer_group.go).
		r.collection, r.konnectItem = "consumer_groups", true
		if len(segs) == 3 {
			r.key = segs[2]
		}
	case r.cp != "" && segs[0] == "v1" && len(segs) == 6 && segs[1] == "consumers" && segs[3] == "groups" && segs[5] == "members":
		// /v1/consumers/<consumer>/groups/<group>/members
		r.special, r.collection, r.parentKey, r.key = "member", "consumer_group_members", segs[2], segs[4]
	case segs[0] == "tags" && len(segs) <= 2:
		r.special = "tags"
		if len(segs) == 2 {
			r.key = segs[1]
		}
	case r.cp == "" && enterpriseCollections[segs[0]]:
		r.special = "unknown"
	case entityEmpty[segs[0]]:
		r.special, r.collection = "empty", segs[0]
		if len(segs) > 1 {
			r.key = segs[1]
		}
	case len(segs) <= 2 && isCollection(segs[0]):
		r.collection = segs[0]
		if len(segs) == 2 {
			r.key = segs[1]
		}
	case (len(segs) == 3 || len(segs) == 4) && entityNested[segs[0]+"/"+segs[2]] != "":
		r.parentCol, r.parentKey = segs[0], segs[1]
		r.collection = entityNested[segs[0]+"/"+segs[2]]
		if len(segs) == 4 {
			r.key = segs[3]
		}
	case len(segs) == 3 && segs[0] == "upstreams" && segs[2] == "health":
		// kong/api/routes/upstreams.lua
		r.parentCol, r.parentKey, r.collection, r.health = "upstreams", segs[1], "targets", true
	case len(segs) == 3 && isCollection(segs[0]) && foreignField(segs[0], segs[2]) != nil:
		// kong/api/endpoints.lua generates /<entity>/<key>/<foreign key>.
		r.collection, r.key, r.foreign = segs[0], segs[1], segs[2]
	default:
		r.special = "unknown"
	}
	if r.cp == "" && enterpriseCollections[r.collection] {
		r.special = "unknown"
	}
	return r
}

// foreignField is the foreign-key field named field of collection's
// schema, nil when it has none.
func foreignField(collection, field string) *sfield {
	es := kongEntities[collectionEntity[collection]]
	if es == nil {
		return nil
	}
	for _, f := range es.fields {
		if f.name == field && f.typ == "foreign" {
			return f
		}
	}
	return nil
}

func isCollection(c string) bool {
	for _, x := range entityCollections {
		if x == c {
			return true
		}
	}
	return false
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// ServeHTTP serves the entity API.
func (a *EntityAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := parseEntityPath(r.URL.Path)
	countKey := r.Method + " " + req.collection
	switch req.special {
	case "root":
		countKey = r.Method + " /"
	case "plugin-schema", "schema", "validate":
		countKey = r.Method + " schemas"
	case "unknown":
		countKey = r.Method + " ?" + r.URL.Path
	}

	a.mu.Lock()
	a.counts[countKey]++
	if isWrite(r.Method) {
		a.writes = append(a.writes, r.Method+" "+r.URL.Path)
	}
	var fault *EntityFault
	for i, f := range a.faults {
		if (f.WritesOnly && !isWrite(r.Method)) || (f.Collection != "" && f.Collection != req.collection) {
			continue
		}
		f := f
		fault = &f
		a.faults = append(a.faults[:i:i], a.faults[i+1:]...)
		break
	}
	latency, hang := a.latency, a.hang
	a.mu.Unlock()

	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if fault != nil {
		if fault.Drop {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		if fault.RetryAfter > 0 {
			secs := (fault.RetryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
		}
		msg := fault.Message
		if msg == "" {
			msg = http.StatusText(fault.Status)
		}
		writeEntityJSON(w, fault.Status, map[string]any{"message": msg})
		return
	}

	switch req.special {
	case "root":
		writeEntityJSON(w, http.StatusOK, map[string]any{
			"version":       EntityVersion,
			"tagline":       "Welcome to kong (emulator)",
			"configuration": map[string]any{"database": "postgres"},
		})
		return
	case "plugin-schema", "schema", "konnect-schema", "validate":
		status, body := serveSchemaRequest(r, req, req.cp != "", a.expressions || req.cp != "", a.now())
		writeEntityJSON(w, status, body)
		return
	case "tags":
		a.mu.Lock()
		status, body := a.tags(r, a.scope(req.cp), req.key)
		a.mu.Unlock()
		writeEntityJSON(w, status, body)
		return
	case "unknown":
		// Kong answers 404 for what it does not know (Enterprise
		// collections in OSS, /workspaces whose DAO has no Admin API).
		writeEntityJSON(w, http.StatusNotFound, map[string]any{"message": "Not found"})
		return
	case "empty":
		if r.Method == http.MethodGet && req.key == "" {
			writeEntityJSON(w, http.StatusOK, map[string]any{"data": []any{}, "next": nil})
			return
		}
		writeEntityJSON(w, http.StatusNotFound, map[string]any{"message": "Not found"})
		return
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if req.special == "member" {
		status, body := a.scope(req.cp).member(r.Method, req.parentKey, req.key)
		writeEntityJSON(w, status, body)
		return
	}
	status, body := a.serveEntity(r, req)
	if req.konnectItem && status < 300 && body != nil {
		body = map[string]any{"item": body}
	}
	writeEntityJSON(w, status, body)
}

// readEntityBody reads a JSON object body; an empty body is an empty
// object.
func readEntityBody(r *http.Request) (map[string]any, error) {
	var body map[string]any
	raw, err := io.ReadAll(r.Body)
	if err == nil && len(raw) > 0 {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		return nil, err
	}
	if body == nil {
		body = map[string]any{}
	}
	return body, nil
}

func writeEntityJSON(w http.ResponseWriter, status int, body any) {
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"message":"An unexpected error occurred"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func notFound() (int, any) { return http.StatusNotFound, map[string]any{"message": "Not found"} }

// serveEntity runs with a.mu held.
func (a *EntityAPI) serveEntity(r *http.Request, req entityRequest) (int, any) {
	s := a.scope(req.cp)
	s.expire()
	var parentID string
	if req.parentCol != "" {
		p := s.lookup(req.parentCol, req.parentKey)
		if p == nil {
			return notFound()
		}
		parentID, _ = p["id"].(string)
	}

	if req.foreign != "" {
		return s.foreignEntity(r.Method, req)
	}
	if req.health {
		return s.health(r, a, req, parentID)
	}
	// kong/api/routes/consumers.lua: /consumers?custom_id=x answers the
	// consumer of that custom_id, or none.
	if q := r.URL.Query(); req.collection == "consumers" && req.key == "" && r.Method == http.MethodGet && q.Has("custom_id") {
		cid := q.Get("custom_id")
		if cid == "" {
			return http.StatusBadRequest, map[string]any{"message": "custom_id must be an unempty string"}
		}
		data := []any{}
		for _, c := range sortedByID(s.cols["consumers"]) {
			if c["custom_id"] == cid {
				data = append(data, c)
			}
		}
		return http.StatusOK, map[string]any{"data": data, "next": nil}
	}
	// kong/plugins/acl/api.lua: /consumers/<c>/acls/<group> names the
	// consumer's ACL of that group; a PUT of a missing one creates it.
	var aclGroup string
	if req.collection == "acls" && parentID != "" && req.key != "" && !looksLikeUUID(req.key) {
		aclGroup = req.key
		req.key = ""
		for _, e := range s.cols["acls"] {
			if refID(e["consumer"]) == parentID && e["group"] == aclGroup {
				req.key, _ = e["id"].(string)
			}
		}
		if req.key == "" {
			if r.Method != http.MethodPut {
				return notFound()
			}
			req.key = newUUID()
		}
	}

	switch {
	case r.Method == http.MethodGet && req.key == "":
		return a.list(r, s, req, parentID)
	case r.Method == http.MethodGet:
		e := s.lookup(req.collection, req.key)
		if e == nil || (parentID != "" && refID(e[parentField[req.parentCol]]) != parentID) {
			return notFound()
		}
		if req.collection == "consumer_groups" && !req.konnectItem {
			return http.StatusOK, s.groupObject(e)
		}
		return http.StatusOK, s.present(req.collection, e)
	case r.Method == http.MethodDelete && req.key != "":
		e := s.lookup(req.collection, req.key)
		if e == nil {
			return http.StatusNoContent, nil
		}
		id, _ := e["id"].(string)
		if req.collection == "services" {
			for _, rt := range s.cols["routes"] {
				if refID(rt["service"]) == id {
					// kong/db/errors.lua foreign_key_violation_restricted
					return http.StatusBadRequest, map[string]any{
						"code": 4, "name": "foreign key violation",
						"message": "an existing 'routes' entity references this 'services' entity",
						"fields":  map[string]any{"@referenced_by": "routes"},
					}
				}
			}
		}
		s.deleteCascade(req.collection, id)
		return http.StatusNoContent, nil
	case r.Method == http.MethodPut || r.Method == http.MethodPatch || (r.Method == http.MethodPost && req.key == ""):
	default:
		return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
	}

	body, err := readEntityBody(r)
	if err != nil {
		return http.StatusBadRequest, map[string]any{"message": "Cannot parse JSON body"}
	}

	if _, given := body["group"]; aclGroup != "" && !given {
		body["group"] = aclGroup
	}
	var existing map[string]any
	if req.key != "" {
		existing = s.lookup(req.collection, req.key)
	}
	schema := kongEntities[collectionEntity[req.collection]]
	if r.Method == http.MethodPatch {
		if existing == nil {
			return notFound()
		}
		body = mergeRecords(schema.fields, existing, body)
	}
	switch {
	case existing != nil:
		body["id"] = existing["id"]
		if ca, ok := existing["created_at"]; ok {
			body["created_at"] = ca
		}
	case req.key != "" && looksLikeUUID(req.key):
		body["id"] = req.key
	case req.key != "":
		// PUT /<collection>/<name> upserts by name.
		if f := entityNameField[req.collection]; f != "" {
			body[f] = req.key
		}
	}
	if parentID != "" {
		body[parentField[req.parentCol]] = map[string]any{"id": parentID}
	}
	if rej, ok := a.rejected(req.collection, body); ok {
		return rej.status, map[string]any{
			"code": 2, "name": "schema violation", "message": rej.message,
			"fields": map[string]any{"@entity": []any{rej.message}},
		}
	}
	stored, status, errBody := a.store(s, req.collection, schema, body, req.cp != "", a.expressions || req.cp != "")
	if errBody != nil {
		return status, errBody
	}
	if req.collection == "basic-auths" && r.URL.Query().Get("skip_hash") != "true" {
		// Kong stores SHA-1(password .. consumer id), hex, and returns that.
		if pw, ok := stored["password"].(string); ok && (existing == nil || existing["password"] != pw) {
			sum := sha1.Sum([]byte(pw + refID(stored["consumer"])))
			stored["password"] = hex.EncodeToString(sum[:])
		}
	}
	snis, setSNIs := stored["snis"].([]any)
	if req.collection == "certificates" {
		delete(stored, "snis") // transient: the names of its SNIs
	}
	id := stored["id"].(string)
	if req.collection == "key-auths" {
		switch ttl, _ := stored["ttl"].(float64); {
		case ttl > 0:
			s.expires[id] = a.now().Add(time.Duration(ttl * float64(time.Second)))
		case r.Method != http.MethodPatch:
			delete(s.expires, id)
		}
		delete(stored, "ttl")
	}
	s.put(req.collection, id, stored)
	if req.collection == "certificates" && setSNIs {
		s.replaceSNIs(id, snis, a.now())
	}
	status = http.StatusOK
	if r.Method == http.MethodPost {
		status = http.StatusCreated
	}
	return status, s.present(req.collection, stored)
}

// store fills body as Kong's DAO does (defaults, auto fields, timestamps)
// and checks it: schema, foreign keys, unique keys. It returns the entity
// to store, or the status and Kong's error body.
func (a *EntityAPI) store(s *entityScope, collection string, schema *entitySchema, body map[string]any, ee, expressions bool) (map[string]any, int, map[string]any) {
	out, status, errBody := validateEntity(schema, body, ee, expressions, a.now())
	if errBody != nil {
		return nil, status, errBody
	}
	if st, msg := s.checkForeign(out); st != 0 {
		return nil, st, msg
	}
	if st, msg := s.checkUnique(collection, schema, out["id"].(string), out); st != 0 {
		return nil, st, msg
	}
	return out, 0, nil
}

// validateEntity is Kong's schema:validate(schema:process_auto_fields(
// body, "insert")): body filled with its defaults and auto fields, then
// the field and entity checks; not the foreign and unique keys, which need
// the database. It returns the filled entity, or the status and Kong's
// error body.
func validateEntity(schema *entitySchema, body map[string]any, ee, expressions bool, now time.Time) (map[string]any, int, map[string]any) {
	collection := schema.name
	if collection == "services" {
		serviceURL(body)
	}
	fields := schemaFields(schema, ee, expressions)
	if collection == "plugins" {
		name, _ := body["name"].(string)
		ps := pluginSchemaFor(name, ee)
		if ps == nil {
			msg := fmt.Sprintf("plugin '%s' not enabled; add it to the 'plugins' configuration property", name)
			return nil, http.StatusBadRequest, schemaViolation(fieldErrors{"name": msg})
		}
		fields = pluginFields(ps)
	}
	if schema.enterprise && !ee {
		return nil, http.StatusNotFound, map[string]any{"message": "Not found"}
	}
	fc := &fillContext{now: now, ee: ee, errs: fieldErrors{}}
	// updated_at is set on every write; created_at is kept on an update.
	delete(body, "updated_at")
	out := fillEntity(fields, body, fc, nil)
	if len(fc.errs) > 0 {
		return nil, http.StatusBadRequest, schemaViolation(fc.errs)
	}
	if ee && collection == "routes" && out["expression"] != nil {
		// Konnect keeps one route schema for both router flavors and
		// does not give an expression route the traditional router's
		// defaults (go-database-reconciler's file/builder.go strips them
		// from such routes for Konnect, so a stored default would be a
		// difference on every sync).
		for _, f := range []string{"path_handling", "regex_priority"} {
			if _, given := body[f]; !given {
				out[f] = nil
			}
		}
	}
	if errs := entityRules(collection, out, now); errs != nil {
		return nil, http.StatusBadRequest, schemaViolation(errs)
	}
	return out, 0, nil
}

func (a *EntityAPI) rejected(collection string, body map[string]any) (entityReject, bool) {
	for _, f := range []string{"id", "name", "username", entityNameField[collection]} {
		if v, ok := body[f].(string); ok && v != "" {
			if rej, ok := a.rejects[collection+"/"+v]; ok {
				return rej, true
			}
		}
	}
	return entityReject{}, false
}

// list answers GET of a collection with Kong's pagination: size (default
// 100, at most 1000), an opaque offset, and next (null on the last page).
func (a *EntityAPI) list(r *http.Request, s *entityScope, req entityRequest, parentID string) (int, any) {
	q := r.URL.Query()
	size := 100
	if v := q.Get("size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return http.StatusBadRequest, map[string]any{
				"code": 9, "name": "invalid size", "message": "size must be an integer between 1 and 1000",
			}
		}
		size = n
	}
	after := ""
	if v := q.Get("offset"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return http.StatusBadRequest, map[string]any{
				"code": 7, "name": "invalid offset", "message": "'" + v + "' is not a valid offset: bad base64 encoding",
			}
		}
		after = string(b)
	}
	tagsAll, tagsAny := parseTags(q.Get("tags"))
	var page []any
	var last string
	more := false
	for _, e := range sortedByID(s.cols[req.collection]) {
		id, _ := e["id"].(string)
		if id <= after {
			continue
		}
		if parentID != "" && refID(e[parentField[req.parentCol]]) != parentID {
			continue
		}
		if !matchTags(e, tagsAll, tagsAny) {
			continue
		}
		if len(page) == size {
			more = true
			break
		}
		page = append(page, s.present(req.collection, e))
		last = id
	}
	if page == nil {
		page = []any{}
	}
	out := map[string]any{"data": page, "next": nil}
	if more {
		off := base64.RawURLEncoding.EncodeToString([]byte(last))
		out["offset"] = off
		out["next"] = r.URL.Path + "?offset=" + off + "&size=" + strconv.Itoa(size)
	}
	return http.StatusOK, out
}

func parseTags(v string) (all, anyOf []string) {
	if v == "" {
		return nil, nil
	}
	if strings.Contains(v, "/") {
		return nil, strings.Split(v, "/")
	}
	return strings.Split(v, ","), nil
}

func matchTags(e map[string]any, all, anyOf []string) bool {
	if len(all) == 0 && len(anyOf) == 0 {
		return true
	}
	have := map[string]bool{}
	if ts, ok := e["tags"].([]any); ok {
		for _, t := range ts {
			if s, ok := t.(string); ok {
				have[s] = true
			}
		}
	}
	for _, t := range all {
		if !have[t] {
			return false
		}
	}
	if len(anyOf) == 0 {
		return true
	}
	for _, t := range anyOf {
		if have[t] {
			return true
		}
	}
	return false
}

// foreignEntity answers GET /<collection>/<key>/<field>: the entity the
// foreign key field of the entity key references (404 when there is none).
func (s *entityScope) foreignEntity(method string, req entityRequest) (int, any) {
	if method != http.MethodGet {
		return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
	}
	e := s.lookup(req.collection, req.key)
	if e == nil {
		return notFound()
	}
	col := foreignField(req.collection, req.foreign).reference
	ref := s.lookup(col, refID(e[req.foreign]))
	if ref == nil {
		return notFound()
	}
	return http.StatusOK, s.present(col, ref)
}

// health answers GET /upstreams/<u>/health: the upstream's targets, each
// with "health" and "data" (kong/db/dao/targets.lua
// page_for_upstream_with_health). The emulator runs no balancer or health
// checks: a target at an IP address is HEALTHCHECKS_OFF (the state of an
// upstream without active or passive checks, the default), one at a name
// DNS_ERROR (no names are resolved).
func (s *entityScope) health(r *http.Request, a *EntityAPI, req entityRequest, upstreamID string) (int, any) {
	if r.Method != http.MethodGet {
		return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
	}
	status, body := a.list(r, s, req, upstreamID)
	page, ok := body.(map[string]any)
	if status != http.StatusOK || !ok {
		return status, body
	}
	data, _ := page["data"].([]any)
	out := make([]any, 0, len(data))
	for _, x := range data {
		t := deepCopy(x.(map[string]any))
		target, _ := t["target"].(string)
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			host, port = target, "8000"
		}
		if net.ParseIP(strings.Trim(host, "[]")) == nil {
			t["health"], t["data"] = "DNS_ERROR", nil
		} else {
			p, _ := strconv.Atoi(port)
			t["health"] = "HEALTHCHECKS_OFF"
			t["data"] = map[string]any{"addresses": []any{map[string]any{
				"ip": host, "port": p, "health": "HEALTHCHECKS_OFF", "weight": t["weight"]}}}
		}
		out = append(out, t)
	}
	page["data"] = out
	page["node_id"] = nil
	return http.StatusOK, page
}

// lookup finds an entity by id, or by its name field.
func (s *entityScope) lookup(collection, key string) map[string]any {
	col := s.cols[collection]
	if e, ok := col[key]; ok {
		return e
	}
	f := entityNameField[collection]
	if f == "" {
		return nil
	}
	for _, e := range col {
		if v, ok := e[f].(string); ok && v == key {
			return e
		}
	}
	return nil
}

func (s *entityScope) checkForeign(body map[string]any) (int, map[string]any) {
	fields := make([]string, 0, len(entityForeign))
	for f := range entityForeign {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, field := range fields {
		col := entityForeign[field]
		id := refID(body[field])
		if id == "" || s.lookup(col, id) != nil {
			continue
		}
		// kong/db/errors.lua foreign_key_violation_invalid_reference
		key := map[string]any{"id": id}
		msg := fmt.Sprintf("the foreign key '%s' does not reference an existing '%s' entity.", luaPretty(key), col)
		return http.StatusBadRequest, map[string]any{
			"code": 4, "name": "foreign key violation", "message": msg,
			"fields": map[string]any{field: key},
		}
	}
	return 0, nil
}

// uniqueKey is one value that must be unique within a collection: a field
// marked unique, or the entity's cache key.
type uniqueKey struct {
	fields map[string]any
	text   string
}

func uniqueKeys(schema *entitySchema, e map[string]any) []uniqueKey {
	var keys []uniqueKey
	for _, f := range schema.fields {
		if v, ok := e[f.name].(string); ok && f.unique && v != "" {
			m := map[string]any{f.name: v}
			keys = append(keys, uniqueKey{fields: m, text: luaPretty(m)})
		}
	}
	if len(schema.cacheKey) > 0 {
		m := map[string]any{}
		for _, f := range schema.cacheKey {
			m[f] = e[f]
		}
		if v, ok := e["consumer_group"]; ok && v != nil && schema.name == "plugins" {
			m["consumer_group"] = v
		}
		keys = append(keys, uniqueKey{fields: m, text: luaPretty(m)})
	}
	return keys
}

func (s *entityScope) checkUnique(collection string, schema *entitySchema, id string, body map[string]any) (int, map[string]any) {
	idx := s.unique[collection]
	for _, k := range uniqueKeys(schema, body) {
		if other, ok := idx[k.text]; ok && other != id {
			// kong/db/errors.lua unique_violation
			return http.StatusConflict, map[string]any{
				"code": 5, "name": "unique constraint violation",
				"message": fmt.Sprintf("UNIQUE violation detected on '%s'", k.text),
				"fields":  k.fields,
			}
		}
	}
	return 0, nil
}

// put stores an entity and indexes its unique keys.
func (s *entityScope) put(collection, id string, body map[string]any) {
	if old, ok := s.cols[collection][id]; ok {
		s.unindex(collection, id, old)
	}
	s.cols[collection][id] = body
	for _, k := range uniqueKeys(kongEntities[collectionEntity[collection]], body) {
		s.unique[collection][k.text] = id
	}
}

func (s *entityScope) unindex(collection, id string, e map[string]any) {
	for _, k := range uniqueKeys(kongEntities[collectionEntity[collection]], e) {
		if s.unique[collection][k.text] == id {
			delete(s.unique[collection], k.text)
		}
	}
}

// deleteCascade deletes an entity and what references it (plugins,
// credentials, targets, SNIs), as Kong's cascading foreign keys do.
func (s *entityScope) deleteCascade(collection, id string) {
	if old, ok := s.cols[collection][id]; ok {
		s.unindex(collection, id, old)
	}
	delete(s.cols[collection], id)
	delete(s.expires, id)
	switch collection {
	case "consumer_groups":
		delete(s.members, id)
	case "consumers":
		for _, m := range s.members {
			delete(m, id)
		}
	}
	field := parentField[collection]
	if field == "" {
		return
	}
	for child, col := range s.cols {
		for cid, e := range col {
			if refID(e[field]) == id {
				s.deleteCascade(child, cid)
			}
		}
	}
}

func refID(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	id, _ := m["id"].(string)
	return id
}

func sortedByID(col map[string]map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(col))
	for _, e := range col {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := out[i]["id"].(string)
		b, _ := out[j]["id"].(string)
		return a < b
	})
	return out
}

func deepCopy(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // only JSON-decoded values are stored
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func deepCopyList(l []map[string]any) []map[string]any {
	out := make([]map[string]any, len(l))
	for i, m := range l {
		out[i] = deepCopy(m)
	}
	return out
}

func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// groupObject is GET /consumer_groups/<name or id>: the group with its
// consumers (Kong Enterprise's and Konnect's answer).
func (s *entityScope) groupObject(g map[string]any) map[string]any {
	id, _ := g["id"].(string)
	consumers := []any{}
	for _, c := range sortedByID(s.cols["consumers"]) {
		if cid, _ := c["id"].(string); s.members[id][cid] {
			consumers = append(consumers, c)
		}
	}
	return map[string]any{"consumer_group": g, "consumers": consumers, "plugins": []any{}}
}

// member adds (POST) or removes (DELETE) a consumer of a consumer group,
// Konnect's /v1/consumers/<consumer>/groups/<group>/members.
func (s *entityScope) member(method, consumerKey, groupKey string) (int, any) {
	c, g := s.lookup("consumers", consumerKey), s.lookup("consumer_groups", groupKey)
	if c == nil || g == nil {
		return notFound()
	}
	cid, _ := c["id"].(string)
	gid, _ := g["id"].(string)
	switch method {
	case http.MethodPost:
		if s.members[gid] == nil {
			s.members[gid] = map[string]bool{}
		}
		s.members[gid][cid] = true
		return http.StatusCreated, map[string]any{"consumer": map[string]any{"id": cid}, "consumer_group": map[string]any{"id": gid}}
	case http.MethodDelete:
		delete(s.members[gid], cid)
		return http.StatusNoContent, nil
	}
	return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
}

// expire deletes the entities whose ttl has run out.
func (s *entityScope) expire() {
	now := s.now()
	for id, at := range s.expires {
		if !at.After(now) {
			delete(s.expires, id)
			s.deleteCascade("key-auths", id)
		}
	}
}

// present is an entity as Kong answers it: a certificate carries the
// names of its SNIs (kong/db/dao/certificates.lua), sorted; an entity
// with a ttl the seconds it has left; a plugin's config its deprecated
// shorthand fields.
func (s *entityScope) present(collection string, e map[string]any) map[string]any {
	if collection == "plugins" {
		name, _ := e["name"].(string)
		cfg, _ := e["config"].(map[string]any)
		if rec := configField(pluginSchemas[name]); rec != nil && cfg != nil && len(rec.shorthands) > 0 {
			out := make(map[string]any, len(e))
			for k, v := range e {
				out[k] = v
			}
			out["config"] = withShorthands(rec, cfg)
			return out
		}
	}
	if at, ok := s.expires[fmt.Sprint(e["id"])]; ok {
		out := make(map[string]any, len(e)+1)
		for k, v := range e {
			out[k] = v
		}
		out["ttl"] = math.Floor(at.Sub(s.now()).Seconds())
		return out
	}
	if collection != "certificates" {
		return e
	}
	id, _ := e["id"].(string)
	names := []any{}
	for _, sni := range sortedByID(s.cols["snis"]) {
		if refID(sni["certificate"]) == id {
			names = append(names, sni["name"])
		}
	}
	sort.Slice(names, func(i, j int) bool { return fmt.Sprint(names[i]) < fmt.Sprint(names[j]) })
	out := make(map[string]any, len(e)+1)
	for k, v := range e {
		out[k] = v
	}
	out["snis"] = names
	return out
}

// replaceSNIs makes names the SNIs of a certificate, as a certificate
// written with "snis" does in Kong.
func (s *entityScope) replaceSNIs(certID string, names []any, now time.Time) {
	want := map[string]bool{}
	for _, n := range names {
		if v, ok := n.(string); ok {
			want[v] = true
		}
	}
	for id, sni := range s.cols["snis"] {
		if refID(sni["certificate"]) != certID {
			continue
		}
		name, _ := sni["name"].(string)
		if want[name] {
			delete(want, name)
			continue
		}
		s.unindex("snis", id, sni)
		delete(s.cols["snis"], id)
	}
	for name := range want {
		id := newUUID()
		ts := float64(now.Unix())
		s.put("snis", id, map[string]any{"id": id, "name": name, "certificate": map[string]any{"id": certID},
			"tags": nil, "created_at": ts, "updated_at": ts})
	}
}

// tags answers GET /tags and /tags/<tag>: every tagged entity as
// {entity_name, entity_id, tag} (kong/db/schema/entities/tags.lua).
func (a *EntityAPI) tags(r *http.Request, s *entityScope, only string) (int, any) {
	if r.Method != http.MethodGet {
		return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
	}
	data := []any{}
	cols := make([]string, 0, len(s.cols))
	for c := range s.cols {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, c := range cols {
		for _, e := range sortedByID(s.cols[c]) {
			tags, _ := e["tags"].([]any)
			for _, t := range tags {
				if only != "" && t != only {
					continue
				}
				data = append(data, map[string]any{"entity_name": collectionEntity[c], "entity_id": e["id"], "tag": t})
			}
		}
	}
	return http.StatusOK, map[string]any{"data": data, "offset": nil, "next": nil}
}

// serveSchema answers /schemas/<entity>, /schemas/plugins/<name> (Kong's
// shape, kong/api/routes/kong.lua) and Konnect's /v1/schemas/json/<entity>
// (a JSON Schema). Enterprise entities and plugins exist in Konnect only.
func serveSchema(req entityRequest, expressions bool) (int, any) {
	ee := req.cp != ""
	switch req.special {
	case "plugin-schema":
		ps := pluginSchemaFor(req.pluginName, ee)
		if ps == nil {
			return http.StatusNotFound, map[string]any{"message": "No plugin named '" + req.pluginName + "'"}
		}
		return http.StatusOK, pluginSchemaJSON(ps)
	case "konnect-schema":
		es := konnectEntity[req.schemaName]
		if es == nil || !ee {
			return notFound()
		}
		return http.StatusOK, jsonSchema(schemaFields(es, true, true))
	default:
		es := kongEntities[req.schemaName]
		if es == nil || (es.enterprise && !ee) {
			return http.StatusNotFound, map[string]any{"message": "No entity named '" + req.schemaName + "'"}
		}
		return http.StatusOK, entitySchemaJSON(es, ee, expressions)
	}
}
