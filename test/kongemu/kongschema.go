package kongemu

// This file holds the facts of Kong 3.9's entity schemas that the entity
// API serves at /schemas/<entity> and applies on every write: field types,
// required fields, defaults, auto fields, uniqueness. They are transcribed
// (facts, not code) from Kong 3.9.1:
//
//	kong/db/schema/entities/{services,routes,consumers,upstreams,targets,
//	  certificates,snis,ca_certificates,plugins}.lua
//	kong/db/schema/typedefs.lua (protocols, ports, tags, timestamps)
//	kong/db/schema/entity.lua (records of an entity are required unless
//	  they say otherwise, so they are returned in full)
//	kong/db/schema/init.lua (handle_missing_field: default, else null when
//	  not required, else a required record is expanded)
//	kong/plugins/{key-auth,basic-auth,hmac-auth,jwt,acl,oauth2}/daos.lua
//	kong/constants.lua (the protocols)
//
// Plugin configuration schemas are in kongplugins.go.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sfield is one field of a Kong schema.
type sfield struct {
	name      string
	typ       string // string, integer, number, boolean, array, set, map, record, foreign, json
	required  bool
	hasDef    bool
	def       any
	auto      bool
	uuid      bool
	timestamp bool
	unique    bool
	reference string
	onDelete  string
	oneOf     []any
	elements  *sfield
	keys      *sfield
	values    *sfield
	fields    []*sfield // record
	// enterprise fields exist in Kong Enterprise and Konnect only.
	enterprise bool
	// abstract is the plugin entity's config: its fields come from the
	// plugin's schema.
	abstract bool
	// expressions fields exist under router_flavor "expressions" only.
	expressions bool
	// notRequired: a record that says required = false.
	notRequired bool
	// shorthands are a record's deprecated shorthand fields.
	shorthands []shorthand
}

// shorthand is a deprecated shorthand field of a record (a schema's
// shorthand_fields with a deprecation, kong/db/schema/init.lua
// process_auto_fields): given, its value moves to path unless that is
// set (to a different value it is an error); read, it answers the value
// at path.
type shorthand struct {
	name, typ string
	path      []string
	message   string
}

type fopt func(*sfield)

func fld(name, typ string, opts ...fopt) *sfield {
	f := &sfield{name: name, typ: typ}
	for _, o := range opts {
		o(f)
	}
	// kong/db/schema/entity.lua: records are required unless they say not
	// (none of the transcribed ones does).
	if typ == "record" && !f.abstract && !f.notRequired {
		f.required = true
	}
	return f
}

var (
	req        fopt = func(f *sfield) { f.required = true }
	exprOnly   fopt = func(f *sfield) { f.expressions = true }
	autoF      fopt = func(f *sfield) { f.auto = true }
	uniq       fopt = func(f *sfield) { f.unique = true }
	eeOnly     fopt = func(f *sfield) { f.enterprise = true }
	abstractF  fopt = func(f *sfield) { f.abstract = true }
	onCascade  fopt = func(f *sfield) { f.onDelete = "cascade" }
	uuidF      fopt = func(f *sfield) { f.uuid = true }
	timestampF fopt = func(f *sfield) { f.timestamp = true }
	optional   fopt = func(f *sfield) { f.notRequired = true }
)

func dflt(v any) fopt              { return func(f *sfield) { f.hasDef, f.def = true, v } }
func oneOf(v ...any) fopt          { return func(f *sfield) { f.oneOf = v } }
func ref(c string) fopt            { return func(f *sfield) { f.reference = c } }
func elems(e *sfield) fopt         { return func(f *sfield) { f.elements = e } }
func recFields(fs ...*sfield) fopt { return func(f *sfield) { f.fields = fs } }
func mapOf(k, v *sfield) fopt      { return func(f *sfield) { f.keys, f.values = k, v } }

// typedefs (kong/db/schema/typedefs.lua).
func idField() *sfield         { return fld("id", "string", uuidF, autoF) }
func tsField(n string) *sfield { return fld(n, "integer", timestampF, autoF) }
func tsMsField(n string) *sfield {
	return fld(n, "number", timestampF, autoF)
}
func tagsField() *sfield { return fld("tags", "set", elems(fld("", "string", req))) }
func strSet(name string, opts ...fopt) *sfield {
	return fld(name, "set", append([]fopt{elems(fld("", "string"))}, opts...)...)
}
func strArray(name string, opts ...fopt) *sfield {
	return fld(name, "array", append([]fopt{elems(fld("", "string"))}, opts...)...)
}

// allProtocols is constants.PROTOCOLS (sorted); httpProtocols those of the
// http subsystem (typedefs.protocols' default).
var (
	allProtocols  = []any{"grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp"}
	httpProtocols = []any{"grpc", "grpcs", "http", "https"}
)

func protocolsField() *sfield {
	return fld("protocols", "set", req, dflt(httpProtocols), elems(fld("", "string", oneOf(allProtocols...))))
}

func protocolsHTTPField() *sfield {
	return fld("protocols", "set", req, dflt(httpProtocols), elems(fld("", "string", oneOf(httpProtocols...))))
}

func consumerRef() *sfield {
	return fld("consumer", "foreign", ref("consumers"), req, onCascade)
}

func ipPortSet(name string) *sfield {
	return fld(name, "set", elems(fld("", "record", recFields(
		fld("ip", "string"), fld("port", "integer")))))
}

// entitySchema is one entity type as Kong's /schemas/<name> describes it.
type entitySchema struct {
	name   string // Kong's entity name, e.g. "keyauth_credentials"
	fields []*sfield
	// cacheKey fields are unique together (Kong's cache_key).
	cacheKey []string
	// endpointKey is the field that names the entity in a path.
	endpointKey string
	// enterprise entities exist in Kong Enterprise and Konnect only.
	enterprise bool
	// msTimestamps: created_at/updated_at are milliseconds (targets).
	konnectName string // /v1/schemas/json/<konnectName>
}

func healthchecksField() *sfield {
	hc := func(name string, statuses []any, extra ...*sfield) *sfield {
		fs := []*sfield{
			fld("http_statuses", "array", dflt(statuses), elems(fld("", "integer"))),
		}
		fs = append(fs, extra...)
		return fld(name, "record", recFields(fs...))
	}
	count := func(n string) *sfield { return fld(n, "integer", dflt(0)) }
	seconds := func(n string, d any) *sfield { return fld(n, "number", dflt(d)) }
	checkType := func() *sfield {
		return fld("type", "string", dflt("http"), oneOf("tcp", "http", "https", "grpc", "grpcs"))
	}
	active := fld("active", "record", recFields(
		checkType(),
		seconds("timeout", 1),
		fld("concurrency", "integer", dflt(10)),
		fld("http_path", "string", dflt("/")),
		fld("https_sni", "string"),
		fld("https_verify_certificate", "boolean", req, dflt(true)),
		fld("headers", "map", mapOf(fld("", "string"), fld("", "array", elems(fld("", "string"))))),
		hc("healthy", []any{200, 302}, seconds("interval", 0), count("successes")),
		hc("unhealthy", []any{429, 404, 500, 501, 502, 503, 504, 505},
			seconds("interval", 0), count("tcp_failures"), count("timeouts"), count("http_failures")),
	))
	passive := fld("passive", "record", recFields(
		checkType(),
		hc("healthy", []any{200, 201, 202, 203, 204, 205, 206, 207, 208, 226,
			300, 301, 302, 303, 304, 305, 306, 307, 308}, count("successes")),
		hc("unhealthy", []any{429, 500, 503}, count("tcp_failures"), count("timeouts"), count("http_failures")),
	))
	return fld("healthchecks", "record", recFields(active, passive, fld("threshold", "number", dflt(0))))
}

// kongEntities are the core and credential entities of Kong 3.9 OSS (and
// the Enterprise ones Konnect has), by Kong's entity name.
var kongEntities = func() map[string]*entitySchema {
	list := []*entitySchema{
		{name: "services", endpointKey: "name", konnectName: "service", fields: []*sfield{
			idField(), tsField("created_at"), tsField("updated_at"),
			fld("name", "string", uniq),
			fld("retries", "integer", dflt(5)),
			fld("protocol", "string", req, dflt("http"), oneOf(allProtocols...)),
			fld("host", "string", req),
			fld("port", "integer", req, dflt(80)),
			fld("path", "string"),
			fld("connect_timeout", "integer", dflt(60000)),
			fld("write_timeout", "integer", dflt(60000)),
			fld("read_timeout", "integer", dflt(60000)),
			tagsField(),
			fld("client_certificate", "foreign", ref("certificates")),
			fld("tls_verify", "boolean"),
			fld("tls_verify_depth", "integer", dflt(nil)),
			fld("ca_certificates", "array", elems(fld("", "string", uuidF))),
			fld("enabled", "boolean", req, dflt(true)),
		}},
		{name: "routes", endpointKey: "name", konnectName: "route", fields: []*sfield{
			idField(), tsField("created_at"), tsField("updated_at"),
			fld("name", "string", uniq),
			fld("protocols", "set", req, dflt([]any{"http", "https"}), elems(fld("", "string", oneOf(allProtocols...)))),
			fld("https_redirect_status_code", "integer", req, dflt(426), oneOf(426, 301, 302, 307, 308)),
			fld("strip_path", "boolean", req, dflt(true)),
			fld("preserve_host", "boolean", req, dflt(false)),
			fld("request_buffering", "boolean", req, dflt(true)),
			fld("response_buffering", "boolean", req, dflt(true)),
			tagsField(),
			fld("service", "foreign", ref("services")),
			strSet("snis"),
			ipPortSet("sources"),
			ipPortSet("destinations"),
			strSet("methods"),
			strArray("hosts"),
			strArray("paths"),
			fld("headers", "map", mapOf(fld("", "string"), fld("", "array", elems(fld("", "string"))))),
			fld("regex_priority", "integer", dflt(0)),
			fld("path_handling", "string", dflt("v0"), oneOf("v0", "v1")),
			fld("expression", "string", exprOnly),
			fld("priority", "integer", req, dflt(0), exprOnly),
		}},
		{name: "consumers", endpointKey: "username", konnectName: "consumer", fields: []*sfield{
			idField(), tsField("created_at"), tsField("updated_at"),
			fld("username", "string", uniq),
			fld("custom_id", "string", uniq),
			tagsField(),
		}},
		{name: "upstreams", endpointKey: "name", konnectName: "upstream", fields: []*sfield{
			idField(), tsField("created_at"),
			fld("name", "string", req, uniq),
			tsField("updated_at"),
			fld("algorithm", "string", dflt("round-robin"), oneOf("consistent-hashing", "least-connections", "round-robin", "latency")),
			fld("hash_on", "string", dflt("none"), oneOf("none", "consumer", "ip", "header", "cookie", "path", "query_arg", "uri_capture")),
			fld("hash_fallback", "string", dflt("none"), oneOf("none", "consumer", "ip", "header", "cookie", "path", "query_arg", "uri_capture")),
			fld("hash_on_header", "string"),
			fld("hash_fallback_header", "string"),
			fld("hash_on_cookie", "string"),
			fld("hash_on_cookie_path", "string", dflt("/")),
			fld("hash_on_query_arg", "string"),
			fld("hash_fallback_query_arg", "string"),
			fld("hash_on_uri_capture", "string"),
			fld("hash_fallback_uri_capture", "string"),
			fld("slots", "integer", dflt(10000)),
			healthchecksField(),
			tagsField(),
			fld("host_header", "string"),
			fld("client_certificate", "foreign", ref("certificates")),
			fld("use_srv_name", "boolean", dflt(false)),
		}},
		{name: "targets", endpointKey: "target", konnectName: "target", cacheKey: []string{"upstream", "target"}, fields: []*sfield{
			idField(), tsMsField("created_at"), tsMsField("updated_at"),
			fld("upstream", "foreign", ref("upstreams"), req, onCascade),
			fld("target", "string", req),
			fld("weight", "integer", dflt(100)),
			tagsField(),
		}},
		{name: "certificates", konnectName: "certificate", fields: []*sfield{
			idField(), tsField("created_at"), tsField("updated_at"),
			fld("cert", "string", req),
			fld("key", "string", req),
			fld("cert_alt", "string"),
			fld("key_alt", "string"),
			tagsField(),
			// snis is transient: the names of the certificate's SNIs.
			fld("snis", "array", elems(fld("", "string"))),
		}},
		{name: "snis", endpointKey: "name", konnectName: "sni", fields: []*sfield{
			idField(),
			fld("name", "string", req, uniq),
			tsField("created_at"), tsField("updated_at"),
			tagsField(),
			fld("certificate", "foreign", ref("certificates"), req),
		}},
		{name: "ca_certificates", konnectName: "ca_certificate", fields: []*sfield{
			idField(), tsField("created_at"), tsField("updated_at"),
			fld("cert", "string", req),
			fld("cert_digest", "string", uniq),
			tagsField(),
		}},
		{name: "plugins", endpointKey: "instance_name", cacheKey: []string{"name", "route", "service", "consumer"}, fields: []*sfield{
			idField(),
			fld("name", "string", req),
			fld("instance_name", "string", uniq),
			tsField("created_at"), tsField("updated_at"),
			fld("route", "foreign", ref("routes"), dflt(nil), onCascade),
			fld("service", "foreign", ref("services"), dflt(nil), onCascade),
			fld("consumer", "foreign", ref("consumers"), dflt(nil), onCascade),
			fld("consumer_group", "foreign", ref("consumer_groups"), dflt(nil), onCascade, eeOnly),
			fld("config", "record", abstractF),
			protocolsField(),
			fld("enabled", "boolean", req, dflt(true)),
			tagsField(),
			fld("ordering", "json", eeOnly),
		}},
		{name: "keyauth_credentials", endpointKey: "key", fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("key", "string", uniq, autoF),
			tagsField(),
			// key-auth is a ttl entity: the remaining seconds, when set.
			fld("ttl", "integer"),
		}},
		{name: "basicauth_credentials", endpointKey: "username", konnectName: "basic-auth", fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("username", "string", req, uniq),
			fld("password", "string", req),
			tagsField(),
		}},
		{name: "hmacauth_credentials", endpointKey: "username", konnectName: "hmac-auth", fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("username", "string", req, uniq),
			fld("secret", "string", autoF),
			tagsField(),
		}},
		{name: "jwt_secrets", endpointKey: "key", konnectName: "jwt", fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("key", "string", uniq, autoF),
			fld("secret", "string", autoF),
			fld("rsa_public_key", "string"),
			fld("algorithm", "string", dflt("HS256"), oneOf("HS256", "HS384", "HS512", "RS256", "RS384", "RS512",
				"ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA")),
			tagsField(),
		}},
		{name: "acls", cacheKey: []string{"consumer", "group"}, fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("group", "string", req),
			tagsField(),
		}},
		{name: "oauth2_credentials", endpointKey: "client_id", fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("name", "string", req),
			fld("client_id", "string", uniq, autoF),
			fld("client_secret", "string", autoF),
			fld("hash_secret", "boolean", req, dflt(false)),
			fld("redirect_uris", "array", elems(fld("", "string"))),
			tagsField(),
			fld("client_type", "string", req, dflt("confidential"), oneOf("confidential", "public")),
		}},
		// kong/db/schema/entities/key_sets.lua, keys.lua (typedefs.pem:
		// a record that is not required).
		{name: "key_sets", endpointKey: "name", fields: []*sfield{
			idField(),
			fld("name", "string", uniq),
			tagsField(),
			tsField("created_at"), tsField("updated_at"),
		}},
		{name: "keys", endpointKey: "name", cacheKey: []string{"kid", "set"}, fields: []*sfield{
			idField(),
			fld("set", "foreign", ref("key_sets"), onCascade),
			fld("name", "string", uniq),
			fld("kid", "string", req),
			fld("jwk", "string"),
			fld("pem", "record", optional, recFields(fld("private_key", "string"), fld("public_key", "string"))),
			tagsField(),
			tsField("created_at"), tsField("updated_at"),
		}},
		// kong/db/schema/entities/tags.lua: the rows of /tags (no
		// endpoints of its own; /schemas/tags describes it).
		{name: "tags", endpointKey: "tag", fields: []*sfield{
			fld("tag", "string"),
			fld("entity_name", "string", req),
			fld("entity_id", "string", uuidF, req),
		}},
		// Consumer groups are Kong Enterprise's: Konnect only.
		{name: "consumer_groups", endpointKey: "name", enterprise: true, konnectName: "consumer_group", fields: []*sfield{
			idField(), tsField("created_at"), tsField("updated_at"),
			fld("name", "string", req, uniq),
			tagsField(),
		}},
		// mtls-auth is a Kong Enterprise plugin: Konnect only.
		{name: "mtls_auth_credentials", enterprise: true, konnectName: "mtls-auth", fields: []*sfield{
			idField(), tsField("created_at"), consumerRef(),
			fld("subject_name", "string", req),
			fld("ca_certificate", "foreign", ref("ca_certificates"), onCascade),
			tagsField(),
		}},
	}
	m := make(map[string]*entitySchema, len(list))
	for _, s := range list {
		m[s.name] = s
	}
	return m
}()

// collectionEntity maps an Admin API collection to Kong's entity name.
var collectionEntity = map[string]string{
	"services": "services", "routes": "routes", "plugins": "plugins", "consumers": "consumers",
	"upstreams": "upstreams", "targets": "targets", "certificates": "certificates", "snis": "snis",
	"ca_certificates": "ca_certificates", "acls": "acls", "basic-auths": "basicauth_credentials",
	"hmac-auths": "hmacauth_credentials", "jwts": "jwt_secrets", "key-auths": "keyauth_credentials",
	"mtls-auths": "mtls_auth_credentials", "oauth2": "oauth2_credentials",
	"consumer_groups": "consumer_groups", "key-sets": "key_sets", "keys": "keys",
}

// konnectEntity maps Konnect's /v1/schemas/json/<name> to an entity.
var konnectEntity = func() map[string]*entitySchema {
	m := map[string]*entitySchema{}
	for _, s := range kongEntities {
		if s.konnectName != "" {
			m[s.konnectName] = s
		}
	}
	return m
}()

// --- serving ---------------------------------------------------------------

// luaJSON renders fields as Kong's /schemas answer does
// (api_helpers.schema_to_jsonable): a list of one-key objects.
func luaJSON(fields []*sfield, ee bool) []any {
	out := make([]any, 0, len(fields))
	for _, f := range fields {
		if f.enterprise && !ee {
			continue
		}
		out = append(out, map[string]any{f.name: fieldJSON(f, ee)})
	}
	return out
}

func fieldJSON(f *sfield, ee bool) map[string]any {
	m := map[string]any{"type": f.typ}
	if f.required {
		m["required"] = true
	}
	if f.hasDef {
		m["default"] = f.def
	}
	for k, b := range map[string]bool{"auto": f.auto, "uuid": f.uuid, "timestamp": f.timestamp, "unique": f.unique, "abstract": f.abstract} {
		if b {
			m[k] = true
		}
	}
	if f.reference != "" {
		m["reference"] = f.reference
	}
	if f.onDelete != "" {
		m["on_delete"] = f.onDelete
	}
	if f.oneOf != nil {
		m["one_of"] = f.oneOf
	}
	if f.elements != nil {
		m["elements"] = fieldJSON(f.elements, ee)
	}
	if f.keys != nil {
		m["keys"] = fieldJSON(f.keys, ee)
		m["values"] = fieldJSON(f.values, ee)
	}
	if f.typ == "record" && !f.abstract {
		m["fields"] = luaJSON(f.fields, ee)
	}
	if len(f.shorthands) > 0 {
		list := make([]any, len(f.shorthands))
		for i, sh := range f.shorthands {
			path := make([]any, len(sh.path))
			for j, p := range sh.path {
				path[j] = p
			}
			list[i] = map[string]any{sh.name: map[string]any{"type": sh.typ, "deprecation": map[string]any{
				"replaced_with": []any{map[string]any{"path": path}}, "message": sh.message, "removal_in_version": "4.0"}}}
		}
		m["shorthand_fields"] = list
	}
	return m
}

// entitySchemaJSON is Kong's GET /schemas/<entity> answer.
func entitySchemaJSON(s *entitySchema, ee, expressions bool) map[string]any {
	return map[string]any{"fields": luaJSON(schemaFields(s, ee, expressions), ee), "entity_checks": []any{}}
}

// schemaFields are the fields of an entity in a Kong OSS (ee false) or
// Konnect, with router_flavor "expressions" or not.
func schemaFields(s *entitySchema, ee, expressions bool) []*sfield {
	out := make([]*sfield, 0, len(s.fields))
	for _, f := range s.fields {
		if (f.enterprise && !ee) || (f.expressions && !expressions) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// jsonSchema renders fields as a JSON Schema, the shape of Konnect's
// /v1/schemas/json/<entity>: foreign keys are objects without additional
// properties (the reconciler skips those when collecting defaults).
func jsonSchema(fields []*sfield) map[string]any {
	props := map[string]any{}
	var required []any
	for _, f := range fields {
		props[f.name] = jsonSchemaField(f)
		if f.required && !f.hasDef && !f.auto {
			required = append(required, f.name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if required != nil {
		out["required"] = required
	}
	return out
}

func jsonSchemaField(f *sfield) map[string]any {
	var m map[string]any
	switch f.typ {
	case "record":
		m = jsonSchema(f.fields)
	case "foreign":
		m = map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"id": map[string]any{"type": "string"}}}
	case "array", "set":
		m = map[string]any{"type": "array"}
		if f.elements != nil {
			m["items"] = jsonSchemaField(f.elements)
		}
		if f.typ == "set" {
			m["uniqueItems"] = true
		}
	case "map":
		m = map[string]any{"type": "object", "additionalProperties": false,
			"patternProperties": map[string]any{".*": jsonSchemaField(f.values)}}
	case "json":
		m = map[string]any{}
	default:
		m = map[string]any{"type": f.typ}
	}
	if f.hasDef {
		m["default"] = f.def
	}
	if f.oneOf != nil {
		m["enum"] = f.oneOf
	}
	return m
}

// --- storing ---------------------------------------------------------------

// fieldErrors collects schema violations by field path, as Kong's "fields".
type fieldErrors map[string]any

func (e fieldErrors) add(path []string, msg string) {
	if len(path) == 1 {
		e[path[0]] = msg
		return
	}
	sub, _ := e[path[0]].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
		e[path[0]] = sub
	}
	fieldErrors(sub).add(path[1:], msg)
}

// flat lists "a.b: msg" entries sorted as Kong's schema_violation message.
func (e fieldErrors) flat() []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			switch v := m[k].(type) {
			case map[string]any:
				walk(name, v)
			default:
				if k == "@entity" {
					for _, x := range asList(v) {
						out = append(out, fmt.Sprint(x))
					}
					continue
				}
				out = append(out, fmt.Sprintf("%s: %v", name, v))
			}
		}
	}
	walk("", e)
	return out
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// schemaViolation is Kong's 400 body for field errors (kong/db/errors.lua).
func schemaViolation(errs fieldErrors) map[string]any {
	buf := errs.flat()
	msg := fmt.Sprintf("schema violation (%s)", strings.Join(buf, "; "))
	if len(buf) > 1 {
		msg = fmt.Sprintf("%d schema violations (%s)", len(buf), strings.Join(buf, "; "))
	}
	return map[string]any{"code": 2, "name": "schema violation", "message": msg, "fields": map[string]any(errs)}
}

// fillContext carries what filling an entity needs besides its schema.
type fillContext struct {
	now time.Time
	// ee: Enterprise fields exist (a Konnect control plane).
	ee bool
	// errs collects the schema violations, by field path.
	errs fieldErrors
}

// fillEntity applies Kong's insert/upsert processing (process_auto_fields
// then validation) to body: unknown fields are errors, missing fields get
// their default, or null when not required; a required record is expanded
// with its own defaults; auto fields are generated; sets lose duplicates;
// a required field left null is "required field missing".
func fillEntity(fields []*sfield, body map[string]any, fc *fillContext, path []string) map[string]any {
	known := map[string]*sfield{}
	for _, f := range fields {
		if f.enterprise && !fc.ee {
			continue
		}
		known[f.name] = f
	}
	for k := range body {
		if known[k] == nil {
			fc.errs.add(append(path, k), "unknown field")
		}
	}
	out := make(map[string]any, len(known))
	for _, f := range fields {
		if known[f.name] == nil {
			continue
		}
		v, present := body[f.name]
		p := append(append([]string(nil), path...), f.name)
		if !present {
			v = missingValue(f, fc, p)
			if v == absent {
				if f.required {
					fc.errs.add(p, "required field missing")
				}
				continue
			}
		} else {
			v = adjustValue(f, v, fc, p)
		}
		if v == nil && f.required && !f.abstract {
			fc.errs.add(p, "required field missing")
		}
		out[f.name] = v
	}
	return out
}

// fillRecord fills a given record: its shorthand fields first, as
// process_auto_fields does (kong/db/schema/init.lua), then its fields.
func fillRecord(f *sfield, m map[string]any, fc *fillContext, path []string) map[string]any {
	if len(f.shorthands) > 0 {
		m = deepCopy(m)
		for _, sh := range f.shorthands {
			v, given := m[sh.name]
			if !given || v == nil {
				delete(m, sh.name)
				continue
			}
			delete(m, sh.name)
			at := m
			for _, p := range sh.path[:len(sh.path)-1] {
				next, _ := at[p].(map[string]any)
				if next == nil {
					next = map[string]any{}
					at[p] = next
				}
				at = next
			}
			last := sh.path[len(sh.path)-1]
			switch cur := at[last]; {
			case cur == nil:
				at[last] = v
			case canonical(cur) != canonical(v):
				// validate_deprecation_exclusiveness
				fc.errs.add(append(append([]string(nil), path...), sh.name), fmt.Sprintf(
					"both deprecated and new field are used but their values mismatch: %s = %v vs %s = %v",
					sh.name, v, strings.Join(sh.path, "."), cur))
			}
		}
	}
	return fillEntity(f.fields, m, fc, path)
}

// withShorthands is a stored record as Kong reads it: each deprecated
// shorthand field answers the value at its path (null when none).
func withShorthands(f *sfield, m map[string]any) map[string]any {
	if len(f.shorthands) == 0 {
		return m
	}
	out := make(map[string]any, len(m)+len(f.shorthands))
	for k, v := range m {
		out[k] = v
	}
	for _, sh := range f.shorthands {
		var v any = m
		for _, p := range sh.path {
			sub, _ := v.(map[string]any)
			v = sub[p]
		}
		out[sh.name] = v
	}
	return out
}

// absent marks a field that stays out of the entity.
var absent = &struct{ absent bool }{true}

// missingValue is handle_missing_field, plus the auto fields of an insert.
func missingValue(f *sfield, fc *fillContext, path []string) any {
	if f.auto {
		switch {
		case f.uuid:
			return newUUID()
		case f.timestamp && f.typ == "number":
			return float64(fc.now.UnixMilli()) / 1000
		case f.timestamp:
			return float64(fc.now.Unix())
		case f.typ == "string":
			return randomHex(16)
		}
	}
	if f.hasDef {
		v := cloneJSON(f.def)
		if f.typ == "record" {
			if m, ok := v.(map[string]any); ok {
				return fillEntity(f.fields, m, fc, path)
			}
		}
		return v
	}
	if !f.required {
		return nil
	}
	if f.typ == "record" && !f.abstract {
		return fillEntity(f.fields, map[string]any{}, fc, path)
	}
	return absent
}

// adjustValue checks a given value's type and fills nested records.
func adjustValue(f *sfield, v any, fc *fillContext, path []string) any {
	if v == nil {
		return nil
	}
	switch f.typ {
	case "string":
		str, ok := v.(string)
		if !ok {
			fc.errs.add(path, "expected a string")
			return v
		}
		// kong/db/schema/init.lua's uuid validator.
		if f.uuid && !looksLikeUUID(str) {
			fc.errs.add(path, "expected a valid UUID")
			return v
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != float64(int64(n)) {
			fc.errs.add(path, "expected an integer")
			return v
		}
	case "number":
		if _, ok := v.(float64); !ok {
			fc.errs.add(path, "expected a number")
			return v
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fc.errs.add(path, "expected a boolean")
			return v
		}
	case "foreign":
		m, ok := v.(map[string]any)
		if !ok {
			fc.errs.add(path, "expected a record")
			return v
		}
		id, _ := m["id"].(string)
		switch {
		case id == "":
			fc.errs.add(append(path, "id"), "required field missing")
		case !looksLikeUUID(id):
			// A foreign key is its entity's primary key, a typedefs.uuid
			// (kong/db/schema/typedefs.lua).
			fc.errs.add(append(path, "id"), "expected a valid UUID")
		}
		return map[string]any{"id": id}
	case "record":
		if f.abstract {
			return v
		}
		m, ok := v.(map[string]any)
		if !ok {
			fc.errs.add(path, "expected a record")
			return v
		}
		return fillRecord(f, m, fc, path)
	case "map":
		if _, ok := v.(map[string]any); !ok {
			fc.errs.add(path, "expected a map")
		}
		return v
	case "array", "set":
		l, ok := v.([]any)
		if !ok {
			if m, isMap := v.(map[string]any); isMap && len(m) == 0 {
				// An empty JSON object is an empty table in Lua.
				return []any{}
			}
			fc.errs.add(path, "expected "+map[string]string{"array": "an array", "set": "a set"}[f.typ])
			return v
		}
		out := make([]any, 0, len(l))
		seen := map[string]bool{}
		for i, x := range l {
			if f.typ == "set" {
				k := canonical(x)
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			if f.elements != nil {
				x = adjustValue(f.elements, x, fc, append(path, strconv.Itoa(i+1)))
			}
			out = append(out, x)
		}
		return out
	}
	if f.oneOf != nil && !containsJSON(f.oneOf, v) {
		parts := make([]string, len(f.oneOf))
		for i, o := range f.oneOf {
			parts[i] = fmt.Sprint(o)
		}
		fc.errs.add(path, "expected one of: "+strings.Join(parts, ", "))
	}
	return v
}

func containsJSON(list []any, v any) bool {
	c := canonical(v)
	for _, x := range list {
		if canonical(x) == c {
			return true
		}
	}
	return false
}

func canonical(v any) string {
	b, _ := json.Marshal(v)
	var x any
	_ = json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

func cloneJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // schema defaults are plain values
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// mergeRecords is Kong's merge of a PATCH body onto the stored row:
// records merge field by field, anything else is replaced.
func mergeRecords(fields []*sfield, stored, patch map[string]any) map[string]any {
	out := deepCopy(stored)
	byName := map[string]*sfield{}
	for _, f := range fields {
		byName[f.name] = f
	}
	for k, v := range patch {
		f := byName[k]
		pm, isMap := v.(map[string]any)
		sm, wasMap := out[k].(map[string]any)
		if f != nil && f.typ == "record" && isMap && wasMap {
			sub := f.fields
			if f.abstract {
				sub = nil
			}
			out[k] = mergeRecords(sub, sm, pm)
			continue
		}
		out[k] = v
	}
	return out
}

// serviceURL expands a service's url shorthand into protocol, host, port
// and path, as the services schema's shorthand_fields do.
func serviceURL(body map[string]any) bool {
	raw, ok := body["url"].(string)
	if !ok {
		return false
	}
	delete(body, "url")
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	port := 0
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	proto := u.Scheme
	if proto == "" {
		switch port {
		case 443:
			proto = "https"
		default:
			proto = "http"
		}
	}
	if port == 0 {
		port = 80
		if proto == "https" {
			port = 443
		}
	}
	body["protocol"], body["host"], body["port"] = proto, u.Hostname(), float64(port)
	if u.Path != "" {
		body["path"] = u.Path
	} else {
		body["path"] = nil
	}
	return true
}

// luaPretty renders a unique key as Kong's messages do (pl.pretty, keys
// sorted): {name="x"}, {consumer={id="..."},group="g"}.
func luaPretty(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + luaPretty(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		return fmt.Sprint(x)
	}
}
