package kongemu

// This file holds what a DB-less gateway's Admin API serves besides
// /config and /status: the schemas and their validation (kong/api/routes/
// kong.lua serves them in both modes), /tags of the loaded configuration,
// GET /config's export, and GET /'s configuration.

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// dblessRoutes registers the schema and tag endpoints of a DB-less
// gateway (a DB-mode gateway has them from the entity API).
func (g *Gateway) dblessRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/schemas/", func(w http.ResponseWriter, r *http.Request) {
		req := parseEntityPath(r.URL.Path)
		status, body := serveSchemaRequest(r, req, false, false, g.clock.Now())
		writeEntityJSON(w, status, body)
	})
	mux.HandleFunc("GET /tags", g.getTags)
	mux.HandleFunc("GET /tags/{tag}", g.getTags)
}

// serveSchemaRequest answers GET /schemas/<entity>, /schemas/plugins/<name>,
// Konnect's /v1/schemas/json/<entity>, and POST /schemas/<entity>/validate
// and /schemas/plugins/validate (kong/api/routes/kong.lua validate_schema:
// the entity filled as an insert and checked, without the database's
// foreign and unique keys; 200 {"message": "schema validation
// successful"}, else Kong's schema violation).
func serveSchemaRequest(r *http.Request, req entityRequest, ee, expressions bool, now time.Time) (int, any) {
	if req.special != "validate" {
		if r.Method != http.MethodGet {
			return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
		}
		return serveSchema(req, expressions)
	}
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, map[string]any{"message": "Method not allowed"}
	}
	es := kongEntities[req.schemaName]
	if es == nil || (es.enterprise && !ee) {
		return http.StatusNotFound, map[string]any{"message": "No entity named '" + req.schemaName + "'"}
	}
	body, err := readEntityBody(r)
	if err != nil {
		return http.StatusBadRequest, map[string]any{"message": "Cannot parse JSON body"}
	}
	if _, status, errBody := validateEntity(es, body, ee, expressions, now); errBody != nil {
		return status, errBody
	}
	return http.StatusOK, map[string]any{"message": "schema validation successful"}
}

// getTags answers GET /tags and /tags/<tag> from the loaded configuration
// (kong/api/routes/tags.lua; rows as kong/db/schema/entities/tags.lua).
// An entity given without an id has entity_id null: Kong's generated ids
// are not emulated.
func (g *Gateway) getTags(w http.ResponseWriter, r *http.Request) {
	only := r.PathValue("tag")
	g.mu.Lock()
	rows := g.tags
	g.mu.Unlock()
	data := []any{}
	for _, row := range rows {
		if only == "" || row["tag"] == only {
			data = append(data, row)
		}
	}
	writeEntityJSON(w, http.StatusOK, map[string]any{"data": data, "offset": nil, "next": nil})
}

// entityTags lists the tags of a configuration's entities, one row per
// entity and tag, by entity type then position.
func entityTags(all []*entity) []map[string]any {
	var rows []map[string]any
	for _, e := range all {
		tags, _ := e.data["tags"].([]any)
		for _, t := range tags {
			var id any
			if s, ok := e.data["id"].(string); ok {
				id = s
			}
			rows = append(rows, map[string]any{"entity_name": e.def.key, "entity_id": id, "tag": t})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		return rows[i]["entity_name"].(string) < rows[j]["entity_name"].(string)
	})
	return rows
}

// exportConfig is GET /config's "config": YAML with _format_version "3.0"
// and _transform false, then the loaded collections
// (kong/db/declarative/export.lua). The collections are as loaded, nested
// entities in place, without the defaults and ids Kong's export from its
// database would add.
func exportConfig(loaded []byte) ([]byte, error) {
	out := map[string]any{}
	if len(loaded) > 0 {
		var v map[string]any
		if err := json.Unmarshal(loaded, &v); err != nil {
			return nil, err
		}
		for k, x := range v {
			if !strings.HasPrefix(k, "_") {
				out[k] = x
			}
		}
	}
	out["_format_version"] = "3.0"
	out["_transform"] = false
	return yaml.Marshal(out)
}

// rootConfiguration is GET /'s "configuration": the database, the router
// flavor, the role and the listeners of Kong's default kong.conf
// (kong/templates/kong_defaults.lua proxy_listen, stream_listen "off"),
// parsed as kong/conf_loader/listeners.lua does: one object per listener
// with its ip, port, the flags it has (true) and has not (false), and the
// listener text without http2.
func rootConfiguration(db string) map[string]any {
	listener := func(ip string, port int, flags ...string) map[string]any {
		all := []string{"ssl", "http2", "proxy_protocol", "deferred", "bind", "reuseport", "backlog=16384",
			"ipv6only=on", "ipv6only=off", "so_keepalive=on", "so_keepalive=off", "so_keepalive=%w*:%w*:%d*"}
		m := map[string]any{"ip": ip, "port": port}
		text := ip + ":" + strconv.Itoa(port)
		for _, f := range all {
			has := false
			for _, x := range flags {
				has = has || x == f
			}
			m[f] = has
			if has && f != "http2" {
				text += " " + f
			}
		}
		m["listener"] = text
		return m
	}
	return map[string]any{
		"database":      db,
		"router_flavor": "traditional_compatible",
		"role":          "traditional",
		"proxy_listen":  []any{"0.0.0.0:8000 reuseport backlog=16384", "0.0.0.0:8443 http2 ssl reuseport backlog=16384"},
		"proxy_listeners": []any{
			listener("0.0.0.0", 8000, "reuseport", "backlog=16384"),
			listener("0.0.0.0", 8443, "http2", "ssl", "reuseport", "backlog=16384"),
		},
		"stream_listen": []any{"off"},
		// An empty Lua table: cjson answers {}.
		"stream_listeners": map[string]any{},
	}
}
