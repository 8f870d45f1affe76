package kongemu

// Plugin schemas of Kong 3.9.1 for the bundled plugins KIC's golden
// configurations and this project's tests use, transcribed (facts, not
// code) from kong/plugins/<name>/schema.lua:
//
//	acl, basic-auth, correlation-id, cors, key-auth, request-termination,
//	request-transformer
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
