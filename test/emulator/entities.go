package emulator

// This file is the entity half of the emulator: the Kong Admin API of a
// gateway with a database (DB mode) and of a Konnect control plane, as
// go-database-reconciler v1.31.6 (with go-kong v0.78.0) uses them. It is an
// emulator, not Kong: it stores what it is sent, checks what a sync depends
// on (foreign keys, unique names, pagination), and fills no schema
// defaults.

import (
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Kong's basic-auth hashing, emulated
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
}

// entityEmpty are collections listed as always empty (Enterprise or newer
// entities the reconciler dumps but a Kong OSS 3.x sync of KIC's output does
// not write).
var entityEmpty = map[string]bool{
	"consumer_groups": true, "key-sets": true, "keys": true, "vaults": true,
	"partials": true, "filter-chains": true, "licenses": true, "degraphql_routes": true,
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
}

// entityForeign maps a foreign-key field to the collection it references.
var entityForeign = map[string]string{
	"service": "services", "route": "routes", "consumer": "consumers",
	"upstream": "upstreams", "certificate": "certificates",
}

// parentField is the foreign-key field a child holds for a parent collection.
var parentField = map[string]string{
	"services": "service", "routes": "route", "consumers": "consumer",
	"upstreams": "upstream", "certificates": "certificate",
}

// entityNameField is the field that identifies an entity in a path besides
// its id.
var entityNameField = map[string]string{
	"services": "name", "routes": "name", "consumers": "username",
	"upstreams": "name", "snis": "name", "key-auths": "key",
	"basic-auths": "username", "hmac-auths": "username", "jwts": "key",
	"oauth2": "client_id",
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
	// unique indexes the unique keys of each collection: key -> id.
	unique map[string]map[string]string
}

// EntityAPI is the emulated entity Admin API. It serves DB mode at "/" and
// any Konnect control plane under KonnectPrefix+"<id>"; each control plane
// and the DB-mode root hold separate entities. It is safe for concurrent
// use. The zero value is not usable; use NewEntityAPI.
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
}

var _ http.Handler = (*EntityAPI)(nil)

// NewEntityAPI returns an empty entity API.
func NewEntityAPI() *EntityAPI {
	return &EntityAPI{
		scopes:  map[string]*entityScope{},
		counts:  map[string]int{},
		rejects: map[string]entityReject{},
		now:     time.Now,
	}
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
		s = &entityScope{cols: map[string]map[string]map[string]any{}, unique: map[string]map[string]string{}}
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
	special    string // "root", "plugin-schema", "schema", "empty", "unknown"
	pluginName string
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
	case segs[0] == "schemas" && len(segs) == 3 && segs[1] == "plugins":
		r.special, r.pluginName = "plugin-schema", segs[2]
	case segs[0] == "schemas" || (segs[0] == "v1" && len(segs) > 1 && segs[1] == "schemas"):
		r.special = "schema"
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
	default:
		r.special = "unknown"
	}
	return r
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
	case "plugin-schema", "schema":
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
	case "plugin-schema":
		writeEntityJSON(w, http.StatusOK, pluginSchema())
		return
	case "schema", "unknown":
		// Kong answers 404 for what it does not know; the reconciler's
		// defaulter tolerates a 404 on entity schemas.
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
	status, body := a.serveEntity(r, req)
	writeEntityJSON(w, status, body)
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
	var parentID string
	if req.parentCol != "" {
		p := s.lookup(req.parentCol, req.parentKey)
		if p == nil {
			return notFound()
		}
		parentID, _ = p["id"].(string)
	}

	switch {
	case r.Method == http.MethodGet && req.key == "":
		return a.list(r, s, req, parentID)
	case r.Method == http.MethodGet:
		e := s.lookup(req.collection, req.key)
		if e == nil || (parentID != "" && refID(e[parentField[req.parentCol]]) != parentID) {
			return notFound()
		}
		return http.StatusOK, e
	case r.Method == http.MethodDelete && req.key != "":
		e := s.lookup(req.collection, req.key)
		if e == nil {
			return http.StatusNoContent, nil
		}
		id, _ := e["id"].(string)
		if req.collection == "services" {
			for _, rt := range s.cols["routes"] {
				if refID(rt["service"]) == id {
					return http.StatusBadRequest, map[string]any{
						"code": 2, "name": "foreign key violation",
						"message": "an existing 'routes' entity references this 'services' entity",
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

	var body map[string]any
	raw, err := io.ReadAll(r.Body)
	if err == nil && len(raw) > 0 {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		return http.StatusBadRequest, map[string]any{"message": "Cannot parse JSON body"}
	}
	if body == nil {
		body = map[string]any{}
	}
	dropNulls(body)

	var existing map[string]any
	if req.key != "" {
		existing = s.lookup(req.collection, req.key)
	}
	if r.Method == http.MethodPatch {
		if existing == nil {
			return notFound()
		}
		merged := deepCopy(existing)
		for k, v := range body {
			merged[k] = v
		}
		body = merged
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
		body["id"] = newUUID()
	default:
		if id, ok := body["id"].(string); !ok || id == "" {
			body["id"] = newUUID()
		}
	}
	if parentID != "" {
		body[parentField[req.parentCol]] = map[string]any{"id": parentID}
	}
	id := body["id"].(string)
	if rej, ok := a.rejected(req.collection, body); ok {
		return rej.status, map[string]any{
			"code": 2, "name": "schema violation", "message": rej.message,
			"fields": map[string]any{"@entity": []any{rej.message}},
		}
	}
	if st, msg := s.checkForeign(body); st != 0 {
		return st, msg
	}
	if st, msg := s.checkUnique(req.collection, id, body); st != 0 {
		return st, msg
	}
	if req.collection == "basic-auths" && r.URL.Query().Get("skip_hash") != "true" {
		// Kong stores SHA-1(password .. consumer id), hex, and returns that.
		if pw, ok := body["password"].(string); ok && (existing == nil || existing["password"] != pw) {
			sum := sha1.Sum([]byte(pw + refID(body["consumer"])))
			body["password"] = hex.EncodeToString(sum[:])
		}
	}
	now := a.now().Unix()
	if _, ok := body["created_at"]; !ok {
		body["created_at"] = now
	}
	if req.collection != "targets" {
		body["updated_at"] = now
	}
	s.put(req.collection, id, body)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		status = http.StatusCreated
	}
	return status, body
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
		page = append(page, e)
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

func (s *entityScope) checkForeign(body map[string]any) (int, any) {
	for field, col := range entityForeign {
		v, ok := body[field]
		if !ok {
			continue
		}
		id := refID(v)
		if id == "" {
			return http.StatusBadRequest, map[string]any{
				"code": 2, "name": "schema violation",
				"message": fmt.Sprintf("schema violation (%s.id: required field missing)", field),
			}
		}
		if s.lookup(col, id) == nil {
			msg := fmt.Sprintf("the foreign key '{id=\"%s\"}' does not reference an existing '%s' entity.", id, col)
			return http.StatusBadRequest, map[string]any{
				"code": 4, "name": "foreign key violation", "message": msg,
				"fields": map[string]any{field: msg},
			}
		}
	}
	return 0, nil
}

// uniqueKeys are the values that must be unique within a collection.
func uniqueKeys(collection string, e map[string]any) []string {
	var keys []string
	if f := entityNameField[collection]; f != "" {
		if v, ok := e[f].(string); ok && v != "" {
			keys = append(keys, f+"="+v)
		}
	}
	switch collection {
	case "consumers":
		if v, ok := e["custom_id"].(string); ok && v != "" {
			keys = append(keys, "custom_id="+v)
		}
	case "plugins":
		name, _ := e["name"].(string)
		keys = append(keys, fmt.Sprintf("name=%s,service=%s,route=%s,consumer=%s",
			name, refID(e["service"]), refID(e["route"]), refID(e["consumer"])))
	case "acls":
		g, _ := e["group"].(string)
		keys = append(keys, fmt.Sprintf("consumer=%s,group=%s", refID(e["consumer"]), g))
	case "targets":
		t, _ := e["target"].(string)
		keys = append(keys, fmt.Sprintf("upstream=%s,target=%s", refID(e["upstream"]), t))
	}
	return keys
}

func (s *entityScope) checkUnique(collection, id string, body map[string]any) (int, any) {
	idx := s.unique[collection]
	for _, k := range uniqueKeys(collection, body) {
		if other, ok := idx[k]; ok && other != id {
			return http.StatusConflict, map[string]any{
				"code": 5, "name": "unique constraint violation",
				"message": fmt.Sprintf("UNIQUE violation detected on '{%s}'", k),
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
	for _, k := range uniqueKeys(collection, body) {
		s.unique[collection][k] = id
	}
}

func (s *entityScope) unindex(collection, id string, e map[string]any) {
	for _, k := range uniqueKeys(collection, e) {
		if s.unique[collection][k] == id {
			delete(s.unique[collection], k)
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

func dropNulls(m map[string]any) {
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
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

// pluginSchema is the schema served for every plugin name: the top-level
// fields of Kong's plugin entity with a free-form config record, which is
// what the reconciler needs to fill defaults (it fails to create a plugin
// whose schema has no config field).
func pluginSchema() map[string]any {
	return map[string]any{
		"fields": []any{
			map[string]any{"id": map[string]any{"type": "string", "uuid": true, "auto": true}},
			map[string]any{"name": map[string]any{"type": "string", "required": true}},
			map[string]any{"instance_name": map[string]any{"type": "string"}},
			map[string]any{"created_at": map[string]any{"type": "integer", "timestamp": true, "auto": true}},
			map[string]any{"route": map[string]any{"type": "foreign", "reference": "routes", "default": nil}},
			map[string]any{"service": map[string]any{"type": "foreign", "reference": "services", "default": nil}},
			map[string]any{"consumer": map[string]any{"type": "foreign", "reference": "consumers", "default": nil}},
			map[string]any{"config": map[string]any{"type": "record", "fields": []any{}}},
			map[string]any{"tags": map[string]any{"type": "set", "elements": map[string]any{"type": "string"}}},
		},
	}
}
