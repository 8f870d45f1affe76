package kongemu

// Plugin schemas of Kong 3.9.1 for the bundled plugins KIC's golden
// configurations and this project's tests use, transcribed (facts, not
// code) from kong/plugins/<name>/schema.lua:
//
//	acl, basic-auth, correlation-id, cors, key-auth, rate-limiting
//	  (with kong/tools/redis/schema.lua), request-termination,
//	  request-transformer
//
// Other bundled plugins answer /schemas/plugins/<name> with the plugin's
// protocols and a config record without fields: the reconciler then fills
// no config defaults and the emulator stores the config as sent, which is
// consistent, but not what Kong stores (see doc.go).

// pluginSchema is a plugin's subschema: the plugin entity fields it
// overrides (consumer, protocols, ...) and its config record.
type pluginSchema struct {
	fields []*sfield
	// free: the config is not transcribed; stored as sent.
	free bool
}

// noConsumer is typedefs.no_consumer: a plugin that cannot be scoped to a
// consumer (the emulator does not enforce eq = null).
func noConsumer() *sfield { return fld("consumer", "foreign", ref("consumers")) }

func configRecord(fs ...*sfield) *sfield { return fld("config", "record", recFields(fs...)) }

// requestTransformerRecord is one of request-transformer's
// {body, headers, querystring} records (plus uri for replace).
func requestTransformerRecord(withURI bool) *sfield {
	arr := func(n string) *sfield { return strArray(n, req, dflt([]any{})) }
	fs := []*sfield{arr("body"), arr("headers"), arr("querystring")}
	if withURI {
		fs = append(fs, fld("uri", "string"))
	}
	return fld("", "record", recFields(fs...))
}

func named(name string, f *sfield) *sfield {
	c := *f
	c.name = name
	return &c
}

var pluginSchemas = map[string]*pluginSchema{
	"acl": {fields: []*sfield{
		noConsumer(), protocolsHTTPField(),
		configRecord(
			strArray("allow"),
			strArray("deny"),
			fld("hide_groups_header", "boolean", req, dflt(false)),
			fld("always_use_authenticated_groups", "boolean", req, dflt(false)),
		),
	}},
	"basic-auth": {fields: []*sfield{
		noConsumer(), protocolsHTTPField(),
		configRecord(
			fld("anonymous", "string"),
			fld("hide_credentials", "boolean", req, dflt(false)),
			fld("realm", "string", req, dflt("service")),
		),
	}},
	"correlation-id": {fields: []*sfield{
		protocolsHTTPField(),
		configRecord(
			fld("header_name", "string", dflt("Kong-Request-ID")),
			fld("generator", "string", req, dflt("uuid#counter"), oneOf("uuid", "uuid#counter", "tracker")),
			fld("echo_downstream", "boolean", req, dflt(false)),
		),
	}},
	"cors": {fields: []*sfield{
		noConsumer(), protocolsHTTPField(),
		configRecord(
			strArray("origins"),
			strArray("headers"),
			strArray("exposed_headers"),
			strArray("methods", dflt([]any{"GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT"})),
			fld("max_age", "number"),
			fld("credentials", "boolean", req, dflt(false)),
			fld("private_network", "boolean", req, dflt(false)),
			fld("preflight_continue", "boolean", req, dflt(false)),
		),
	}},
	"key-auth": {fields: []*sfield{
		noConsumer(), protocolsHTTPField(),
		configRecord(
			strArray("key_names", req, dflt([]any{"apikey"})),
			fld("hide_credentials", "boolean", req, dflt(false)),
			fld("anonymous", "string"),
			fld("key_in_header", "boolean", req, dflt(true)),
			fld("key_in_query", "boolean", req, dflt(true)),
			fld("key_in_body", "boolean", req, dflt(false)),
			fld("run_on_preflight", "boolean", req, dflt(true)),
			fld("realm", "string"),
		),
	}},
	"rate-limiting": {fields: []*sfield{
		protocolsHTTPField(),
		rateLimitingConfig(),
	}},
	"request-termination": {fields: []*sfield{
		protocolsHTTPField(),
		configRecord(
			fld("status_code", "integer", req, dflt(503)),
			fld("message", "string"),
			fld("content_type", "string"),
			fld("body", "string"),
			fld("echo", "boolean", req, dflt(false)),
			fld("trigger", "string"),
		),
	}},
	"request-transformer": {fields: []*sfield{
		protocolsField(),
		configRecord(
			fld("http_method", "string"),
			named("remove", requestTransformerRecord(false)),
			named("rename", requestTransformerRecord(false)),
			named("replace", requestTransformerRecord(true)),
			named("add", requestTransformerRecord(false)),
			named("append", requestTransformerRecord(false)),
		),
	}},
}

// rateLimitingConfig is rate-limiting's config. policy has the one_of of
// a Kong with a database (a DB-less Kong leaves out "cluster"). The
// plugin's entity checks (a limit is needed; redis settings with the redis
// policy) and validators (gt = 0, the periods' order) are left out.
func rateLimitingConfig() *sfield {
	limit := func(n string) *sfield { return fld(n, "number") }
	redis := fld("redis", "record", recFields(
		fld("host", "string"),
		fld("port", "integer", dflt(6379)),
		fld("timeout", "integer", dflt(2000)),
		fld("username", "string"),
		fld("password", "string"),
		fld("database", "integer", dflt(0)),
		fld("ssl", "boolean", dflt(false)),
		fld("ssl_verify", "boolean", dflt(false)),
		fld("server_name", "string"),
	))
	cfg := configRecord(
		limit("second"), limit("minute"), limit("hour"), limit("day"), limit("month"), limit("year"),
		fld("limit_by", "string", dflt("consumer"), oneOf("consumer", "credential", "ip", "service", "header", "path")),
		fld("header_name", "string"),
		fld("path", "string"),
		fld("policy", "string", dflt("local"), oneOf("local", "cluster", "redis")),
		fld("fault_tolerant", "boolean", req, dflt(true)),
		redis,
		fld("hide_client_headers", "boolean", req, dflt(false)),
		fld("error_code", "number", dflt(429)),
		fld("error_message", "string", dflt("API rate limit exceeded")),
		fld("sync_rate", "number", req, dflt(-1)),
	)
	for _, sh := range []struct{ field, typ string }{
		{"host", "string"}, {"port", "integer"}, {"password", "string"}, {"username", "string"},
		{"ssl", "boolean"}, {"ssl_verify", "boolean"}, {"server_name", "string"}, {"timeout", "integer"},
		{"database", "integer"},
	} {
		cfg.shorthands = append(cfg.shorthands, shorthand{name: "redis_" + sh.field, typ: sh.typ,
			path:    []string{"redis", sh.field},
			message: "rate-limiting: config.redis_" + sh.field + " is deprecated, please use config.redis." + sh.field + " instead"})
	}
	return cfg
}

// configField is a plugin subschema's config record (nil for none).
func configField(ps *pluginSchema) *sfield {
	if ps == nil {
		return nil
	}
	for _, f := range ps.fields {
		if f.name == "config" {
			return f
		}
	}
	return nil
}

// pluginSchemaFor is the subschema of a plugin the emulator knows (bundled
// or, with ee, an Enterprise plugin), or nil.
func pluginSchemaFor(name string, ee bool) *pluginSchema {
	if s := pluginSchemas[name]; s != nil {
		return s
	}
	if bundledPlugins[name] || (ee && enterprisePlugins[name]) {
		return &pluginSchema{free: true, fields: []*sfield{protocolsField(), fld("config", "record")}}
	}
	return nil
}

// pluginFields are the plugin entity's fields with the subschema's
// overrides.
func pluginFields(ps *pluginSchema) []*sfield {
	over := map[string]*sfield{}
	for _, f := range ps.fields {
		over[f.name] = f
	}
	base := kongEntities["plugins"].fields
	out := make([]*sfield, len(base))
	for i, f := range base {
		if o := over[f.name]; o != nil {
			if o.name == "config" && ps.free {
				o = fld("config", "record", abstractF)
			}
			// A foreign override keeps the entity's default (null) and cascade.
			if o.typ == "foreign" {
				c := *f
				o = &c
			}
			f = o
		} else if f.name == "config" {
			f = fld("config", "record", abstractF)
		}
		out[i] = f
	}
	return out
}

// pluginSchemaJSON is Kong's GET /schemas/plugins/<name> answer.
func pluginSchemaJSON(ps *pluginSchema) map[string]any {
	return map[string]any{"fields": luaJSON(ps.fields, true), "entity_checks": []any{}}
}
