package kongemu

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// DefaultVersion is the Kong version GET / reports.
const DefaultVersion = "3.9.1"

// Gateway is one emulated Kong gateway (Admin API). Create it with New,
// then Start it on a loopback port, or mount Handler on an httptest server.
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
//     server counters. GET /: version (DefaultVersion), database "off", the
//     default kong.conf's listeners (TestStatusRootAndRestart). GET /config:
//     Kong's export of the loaded configuration (exportConfig). /schemas
//     and their validation, and /tags of the loaded configuration, as in
//     DB mode (dbless.go).
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
//     regexes beyond the errors PCRE and RE2 share (checkRegexPaths), tag
//     syntax, expressions; a CA certificate's expiry (a configuration is
//     checked once per body, without a clock).
//     Kong's generated ids (entities given without one get a
//     deterministic id in Kong's flattened entries) and the parent key
//     Kong adds to a nested entity's flattened entry are left out.
type Gateway struct {
	clock    clockwork.Clock
	logger   *slog.Logger
	addr     string
	tls      *tls.Config
	version  string
	dbMode   bool
	check    checkOptions
	cache    *Cache
	nodeID   string
	mux      *http.ServeMux
	handler  http.Handler
	extRoute []func(*Gateway, *http.ServeMux)

	mu     sync.Mutex
	hash   string
	config []byte
	counts map[string]int
	// loaded is the loaded configuration's canonical JSON, tags its
	// tagged entities (GET /config, GET /tags).
	loaded   []byte
	tags     []map[string]any
	loads    int
	restarts int
	faults   faults
	log      []Request
	inflight int
	hanging  int
	// conns is the number of open connections (Close waits for them: the
	// HTTP server's connection goroutines outlive http.Server.Close).
	conns int
	// changed is closed and replaced whenever hanging or the log changes,
	// so tests can wait for an observable condition without sleeping.
	changed chan struct{}
	release chan struct{}

	srv    *http.Server
	ln     net.Listener
	url    string
	done   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// Option configures a Gateway.
type Option func(*Gateway)

// WithAddr sets the listen address of Start (default 127.0.0.1:0).
func WithAddr(addr string) Option { return func(g *Gateway) { g.addr = addr } }

// WithTLS makes Start serve HTTPS with this configuration (set
// ClientAuth/ClientCAs in it to demand client certificates).
func WithTLS(c *tls.Config) Option { return func(g *Gateway) { g.tls = c } }

// WithClock sets the clock for request times and injected latency.
func WithClock(c clockwork.Clock) Option { return func(g *Gateway) { g.clock = c } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(g *Gateway) { g.logger = l } }

// WithVersion sets the version GET / reports.
func WithVersion(v string) Option { return func(g *Gateway) { g.version = v } }

// WithDBMode emulates a gateway with a database: POST /config answers 400
// as Kong does, GET /status has no configuration_hash and GET / reports
// database "postgres". The entity Admin API is added with WithRoutes.
func WithDBMode() Option { return func(g *Gateway) { g.dbMode = true } }

// WithOSS answers as Kong OSS would to Enterprise entities (an "unknown
// field" for consumer_groups, consumer_group_consumers, degraphql_routes)
// and Enterprise plugins ("not enabled"). By default they are accepted.
func WithOSS() Option { return func(g *Gateway) { g.check.oss = true } }

// WithPlugins adds plugin names to the ones the gateway knows.
func WithPlugins(names ...string) Option {
	return func(g *Gateway) {
		if g.check.plugins == nil {
			g.check.plugins = map[string]bool{}
		}
		for _, n := range names {
			g.check.plugins[n] = true
		}
	}
}

// WithBodyLimit answers 413 to request bodies above n bytes (Kong's
// nginx_admin_client_max_body_size). 0 (the default) is no limit.
func WithBodyLimit(n int64) Option { return func(g *Gateway) { g.faults.bodyLimit = n } }

// WithCache shares parsed results between gateways of one process, so a
// fleet of emulators checks each distinct body once (and keeps one copy).
func WithCache(c *Cache) Option { return func(g *Gateway) { g.cache = c } }

// WithRoutes registers more Admin API routes on the gateway's mux (Go 1.22
// patterns such as "GET /services"). They share the fault injection and the
// request log. This is the hook for the entity Admin API (see doc.go).
func WithRoutes(register func(g *Gateway, mux *http.ServeMux)) Option {
	return func(g *Gateway) { g.extRoute = append(g.extRoute, register) }
}

// New returns a gateway with no configuration (hash EmptyHash).
func New(opts ...Option) *Gateway {
	g := &Gateway{
		clock:   clockwork.NewRealClock(),
		logger:  slog.New(slog.DiscardHandler),
		addr:    "127.0.0.1:0",
		version: DefaultVersion,
		hash:    EmptyHash,
		changed: make(chan struct{}),
		release: make(chan struct{}),
		done:    make(chan struct{}),
	}
	for _, o := range opts {
		o(g)
	}
	g.nodeID = nodeUUID()
	g.mux = http.NewServeMux()
	g.mux.HandleFunc("POST /config", g.postConfig)
	g.mux.HandleFunc("GET /config", g.getConfig)
	g.mux.HandleFunc("GET /status", g.getStatus)
	g.mux.HandleFunc("GET /{$}", g.getRoot)
	if !g.dbMode {
		g.dblessRoutes(g.mux)
	}
	for _, r := range g.extRoute {
		r(g, g.mux)
	}
	ctl := http.NewServeMux()
	g.controlRoutes(ctl)
	admin := g.record(g.inject(g.mux))
	g.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "kong/"+g.version)
		if strings.HasPrefix(r.URL.Path, controlPrefix) {
			ctl.ServeHTTP(w, r)
			return
		}
		admin.ServeHTTP(w, r)
	})
	return g
}

// Handler serves the Admin API and the control API (under /_emulator/).
func (g *Gateway) Handler() http.Handler { return g.handler }

// Start listens (WithAddr, default 127.0.0.1:0) and serves in a goroutine
// that Close stops. It returns the base URL, e.g. http://127.0.0.1:38001.
func (g *Gateway) Start() (string, error) {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		return "", fmt.Errorf("emulator: listen on %s: %w", g.addr, err)
	}
	return g.Serve(ln), nil
}

// Serve serves on ln (taking ownership of it) and returns the base URL.
func (g *Gateway) Serve(ln net.Listener) string {
	scheme := "http"
	if g.tls != nil {
		ln = tls.NewListener(ln, g.tls)
		scheme = "https"
	}
	g.mu.Lock()
	g.ln = ln
	g.url = scheme + "://" + ln.Addr().String()
	g.srv = &http.Server{Handler: g.handler, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(g.logger.Handler(), slog.LevelDebug), ConnState: g.connState}
	srv := g.srv
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.logger.Warn("emulator: serve", "err", err)
		}
	}()
	return g.url
}

// URL is the base URL after Start ("" before).
func (g *Gateway) URL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.url
}

// Close stops serving, releases hung requests and waits for the serving
// goroutine. It is safe to call more than once.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.done)
	srv := g.srv
	g.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	g.wg.Wait()
	// Connection goroutines end shortly after their connection closes (up
	// to the server's 500ms reset-avoidance delay); wait, bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if werr := g.Wait(ctx, func(View) bool { return g.openConns() == 0 }); werr != nil && err == nil {
		err = werr
	}
	return err
}

func (g *Gateway) connState(_ net.Conn, st http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch st {
	case http.StateNew:
		g.conns++
	case http.StateClosed, http.StateHijacked:
		g.conns--
		g.notifyLocked()
	}
}

func (g *Gateway) openConns() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conns
}

// Hash is the current configuration_hash (EmptyHash when none is loaded).
func (g *Gateway) Hash() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hash
}

// Config is the body of the last configuration loaded (nil when none).
// Never modify it.
func (g *Gateway) Config() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.config
}

// Counts is the number of entities per collection of the loaded
// configuration.
func (g *Gateway) Counts() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.counts))
	for k, v := range g.counts {
		out[k] = v
	}
	return out
}

// Loads is how many configurations were loaded (201 answers).
func (g *Gateway) Loads() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.loads
}

// Restart empties the gateway as a restarted DB-less Kong is: no
// configuration, configuration_hash all zeros. Faults and the request log
// stay.
func (g *Gateway) Restart() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hash, g.config, g.counts, g.loaded, g.tags = EmptyHash, nil, nil, nil, nil
	g.restarts++
	g.notifyLocked()
}

func (g *Gateway) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Wait blocks until cond holds or ctx ends. cond gets a snapshot of the
// state and runs without the gateway's lock (it may call the gateway's
// methods). Every request, load, restart and hang change wakes it up.
func (g *Gateway) Wait(ctx context.Context, cond func(v View) bool) error {
	for {
		g.mu.Lock()
		v := View{Hash: g.hash, Loads: g.loads, Hanging: g.hanging, InFlight: g.inflight, Requests: len(g.log)}
		ch := g.changed
		g.mu.Unlock()
		if cond(v) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("emulator: waiting: %w (last state %+v)", ctx.Err(), v)
		}
	}
}

// View is a snapshot of a gateway's state for Wait.
type View struct {
	Hash     string
	Loads    int
	Hanging  int
	InFlight int
	Requests int
}

// --- Admin API handlers ----------------------------------------------------

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	if v != nil {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
	}
}

func message(msg string) map[string]string { return map[string]string{"message": msg} }

func truthy(s string) bool {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func (g *Gateway) postConfig(w http.ResponseWriter, r *http.Request) {
	if g.dbMode {
		writeJSON(w, http.StatusBadRequest, message("this endpoint is only available when Kong is configured to not use a database"))
		return
	}
	body, err := readConfigBody(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, message("Request size limit exceeded"))
			return
		}
		writeJSON(w, http.StatusBadRequest, message(err.Error()))
		return
	}
	q := r.URL.Query()
	res, stored := g.cache.check(body, g.check)
	if res.Invalid != nil {
		writeJSON(w, http.StatusBadRequest, res.Invalid.render(truthy(q.Get("flatten_errors"))))
		return
	}
	g.mu.Lock()
	if truthy(q.Get("check_hash")) && res.Hash == g.hash {
		g.mu.Unlock()
		w.WriteHeader(http.StatusNotModified)
		return
	}
	g.hash, g.config, g.counts, g.loaded, g.tags = res.Hash, stored, res.Counts, res.Loaded, res.tags
	g.loads++
	g.notifyLocked()
	g.mu.Unlock()
	// Kong answers with the loaded entities, about the size of the
	// configuration (a client must cope with that); the emulator answers
	// with the configuration's canonical JSON, shared, not copied.
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(res.Loaded)
}

// readConfigBody returns the declarative configuration of a POST /config:
// a JSON or YAML body holding _format_version, or a "config" field (form,
// multipart, or a JSON/YAML body) holding the configuration as a string.
func readConfigBody(r *http.Request) ([]byte, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data" {
		if err := r.ParseMultipartForm(32 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
			return nil, fmt.Errorf("failed parsing the request form: %w", err)
		}
		c := r.FormValue("config")
		if c == "" {
			return nil, errors.New("expected a declarative configuration")
		}
		return []byte(c), nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(body[:min(len(body), 64)]))) == 0 {
		return nil, errors.New("expected a declarative configuration")
	}
	return body, nil
}

// nestedFields renders the errors without flatten_errors: Kong's nested
// "fields" tree, here keyed by the collection and the entity's name or id.
func nestedFields(b *ErrorBody) map[string]any {
	out := map[string]any{}
	for k, v := range b.Fields {
		out[k] = v
	}
	for _, f := range b.FlattenedErrors {
		key := f.EntityName
		if key == "" {
			key = f.EntityID
		}
		coll, _ := out[f.EntityType].(map[string]any)
		if coll == nil {
			coll = map[string]any{}
			out[f.EntityType] = coll
		}
		errs := map[string]any{}
		for _, e := range f.Errors {
			if e.Type == "field" {
				errs[e.Field] = e.Message
			} else {
				l, _ := errs["@entity"].([]string)
				errs["@entity"] = append(l, e.Message)
			}
		}
		coll[key] = errs
	}
	return out
}

func (g *Gateway) getConfig(w http.ResponseWriter, r *http.Request) {
	if g.dbMode {
		writeJSON(w, http.StatusBadRequest, message("this endpoint is only available when Kong is configured to not use a database"))
		return
	}
	g.mu.Lock()
	loaded := g.loaded
	g.mu.Unlock()
	c, err := exportConfig(loaded)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, message("An unexpected error occurred"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"config": string(c)})
}

func (g *Gateway) getStatus(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	total := len(g.log) + 1
	active := g.inflight
	hash := g.hash
	g.mu.Unlock()
	st := map[string]any{
		"server": map[string]int{
			"connections_accepted": total, "connections_handled": total, "total_requests": total,
			"connections_active": active, "connections_reading": 0, "connections_writing": active,
			"connections_waiting": 0,
		},
		"memory": map[string]any{
			"workers_lua_vms":  []map[string]any{{"pid": 1, "http_allocated_gc": "1.00 MiB"}},
			"lua_shared_dicts": map[string]any{"kong": map[string]string{"allocated_slabs": "0.04 MiB", "capacity": "5.00 MiB"}},
		},
	}
	if g.dbMode {
		st["database"] = map[string]bool{"reachable": true}
	} else {
		st["configuration_hash"] = hash
	}
	writeJSON(w, http.StatusOK, st)
}

func (g *Gateway) getRoot(w http.ResponseWriter, r *http.Request) {
	db := "off"
	if g.dbMode {
		db = "postgres"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"version":       g.version,
		"tagline":       "Welcome to kong",
		"hostname":      "kong-emulator",
		"node_id":       g.nodeID,
		"configuration": rootConfiguration(db),
		"plugins": map[string]any{
			"available_on_server": g.availablePlugins(),
			"enabled_in_cluster":  []string{},
		},
		"emulator": true,
	})
}

func (g *Gateway) availablePlugins() map[string]any {
	out := map[string]any{}
	add := func(m map[string]bool) {
		for k := range m {
			out[k] = map[string]string{"version": g.version}
		}
	}
	add(bundledPlugins)
	add(g.check.plugins)
	if !g.check.oss {
		add(enterprisePlugins)
	}
	return out
}
