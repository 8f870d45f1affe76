package kongemu

// entityDef is the emulator's knowledge of one Kong entity type: enough to
// flatten a declarative configuration, check references and uniqueness, and
// run a handful of field rules. It is deliberately much smaller than Kong's
// schemas (see doc.go for what is and is not checked).
type entityDef struct {
	// typ is Kong's entity_type (singular), e.g. "service".
	typ string
	// key is the collection key in a declarative config, e.g. "services".
	key string
	// names are the fields that identify an entity besides its id (first
	// one is reported as entity_name), each unique within the type.
	names []string
	// fields lists the known fields; nil means fields are not checked.
	fields map[string]bool
	// children maps a nested collection key to the child collection key.
	children map[string]string
	// refs maps a reference field to the collection it points into.
	refs map[string]string
	// enterprise marks Kong Enterprise entities (see WithOSS).
	enterprise bool
}

func set(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

var credentialChildren = map[string]string{
	"acls":                  "acls",
	"basicauth_credentials": "basicauth_credentials",
	"keyauth_credentials":   "keyauth_credentials",
	"hmacauth_credentials":  "hmacauth_credentials",
	"jwt_secrets":           "jwt_secrets",
	"oauth2_credentials":    "oauth2_credentials",
	"mtls_auth_credentials": "mtls_auth_credentials",
	"plugins":               "plugins",
}

// entityDefs are the collections the emulator knows, in the order Kong
// checks them. Unknown top-level keys are an "unknown field" error as in Kong.
var entityDefs = []*entityDef{
	{
		typ: "certificate", key: "certificates",
		fields:   set("id", "created_at", "updated_at", "cert", "key", "cert_alt", "key_alt", "tags", "snis"),
		children: map[string]string{"snis": "snis"},
	},
	{
		typ: "sni", key: "snis", names: []string{"name"},
		fields: set("id", "created_at", "updated_at", "name", "certificate", "tags"),
		refs:   map[string]string{"certificate": "certificates"},
	},
	{
		typ: "ca_certificate", key: "ca_certificates",
		fields: set("id", "created_at", "updated_at", "cert", "cert_digest", "tags"),
	},
	{
		typ: "service", key: "services", names: []string{"name"},
		fields: set("id", "created_at", "updated_at", "name", "retries", "protocol", "host", "port", "path",
			"connect_timeout", "write_timeout", "read_timeout", "tags", "client_certificate", "tls_verify",
			"tls_verify_depth", "ca_certificates", "enabled", "url", "routes", "plugins"),
		children: map[string]string{"routes": "routes", "plugins": "plugins"},
		refs:     map[string]string{"client_certificate": "certificates"},
	},
	{
		typ: "route", key: "routes", names: []string{"name"},
		fields: set("id", "created_at", "updated_at", "name", "protocols", "methods", "hosts", "paths", "headers",
			"https_redirect_status_code", "regex_priority", "strip_path", "path_handling", "preserve_host",
			"request_buffering", "response_buffering", "snis", "sources", "destinations", "tags", "service",
			"expression", "priority", "plugins"),
		children: map[string]string{"plugins": "plugins"},
		refs:     map[string]string{"service": "services"},
	},
	{
		typ: "consumer", key: "consumers", names: []string{"username", "custom_id"},
		fields: set("id", "created_at", "updated_at", "username", "custom_id", "tags", "plugins", "acls",
			"basicauth_credentials", "keyauth_credentials", "hmacauth_credentials", "jwt_secrets",
			"oauth2_credentials", "mtls_auth_credentials", "groups"),
		children: credentialChildren,
	},
	{
		typ: "consumer_group", key: "consumer_groups", names: []string{"name"}, enterprise: true,
		fields:   set("id", "created_at", "updated_at", "name", "tags", "plugins", "consumers"),
		children: map[string]string{"plugins": "plugins"},
	},
	{
		typ: "consumer_group_consumer", key: "consumer_group_consumers", enterprise: true,
		fields: set("consumer", "consumer_group", "created_at"),
		refs:   map[string]string{"consumer": "consumers", "consumer_group": "consumer_groups"},
	},
	{
		typ: "upstream", key: "upstreams", names: []string{"name"},
		fields: set("id", "created_at", "updated_at", "name", "algorithm", "hash_on", "hash_fallback",
			"hash_on_header", "hash_fallback_header", "hash_on_cookie", "hash_on_cookie_path",
			"hash_on_query_arg", "hash_fallback_query_arg", "hash_on_uri_capture", "hash_fallback_uri_capture",
			"slots", "healthchecks", "tags", "host_header", "client_certificate", "use_srv_name", "targets"),
		children: map[string]string{"targets": "targets"},
		refs:     map[string]string{"client_certificate": "certificates"},
	},
	{
		typ: "target", key: "targets",
		fields: set("id", "created_at", "updated_at", "upstream", "target", "weight", "tags"),
		refs:   map[string]string{"upstream": "upstreams"},
	},
	{
		typ: "plugin", key: "plugins",
		fields: set("id", "created_at", "updated_at", "name", "instance_name", "route", "service", "consumer",
			"consumer_group", "config", "protocols", "enabled", "tags", "ordering"),
		names: []string{"instance_name"},
		refs: map[string]string{"service": "services", "route": "routes", "consumer": "consumers",
			"consumer_group": "consumer_groups"},
	},
	{typ: "acl", key: "acls", refs: map[string]string{"consumer": "consumers"}},
	{typ: "basicauth_credential", key: "basicauth_credentials", names: []string{"username"}, refs: map[string]string{"consumer": "consumers"}},
	{typ: "keyauth_credential", key: "keyauth_credentials", names: []string{"key"}, refs: map[string]string{"consumer": "consumers"}},
	{typ: "hmacauth_credential", key: "hmacauth_credentials", names: []string{"username"}, refs: map[string]string{"consumer": "consumers"}},
	{typ: "jwt_secret", key: "jwt_secrets", names: []string{"key"}, refs: map[string]string{"consumer": "consumers"}},
	{typ: "oauth2_credential", key: "oauth2_credentials", names: []string{"client_id"}, refs: map[string]string{"consumer": "consumers"}},
	{typ: "mtls_auth_credential", key: "mtls_auth_credentials", refs: map[string]string{"consumer": "consumers"}},
	{typ: "vault", key: "vaults", names: []string{"prefix"}},
	{typ: "key_set", key: "key_sets", names: []string{"name"}},
	{typ: "key", key: "keys", names: []string{"name"}, refs: map[string]string{"set": "key_sets"}},
	{typ: "filter_chain", key: "filter_chains", names: []string{"name"}, refs: map[string]string{"service": "services", "route": "routes"}},
	{typ: "partial", key: "partials", names: []string{"name"}},
	{typ: "degraphql_route", key: "degraphql_routes", enterprise: true, refs: map[string]string{"service": "services"}},
}

var defsByKey = func() map[string]*entityDef {
	m := make(map[string]*entityDef, len(entityDefs))
	for _, d := range entityDefs {
		m[d.key] = d
	}
	return m
}()

// parentRef is the reference field a child nested under a parent of the
// given collection gets implicitly (a route under a service gets "service").
var parentRef = map[string]string{
	"services":        "service",
	"routes":          "route",
	"consumers":       "consumer",
	"consumer_groups": "consumer_group",
	"certificates":    "certificate",
	"upstreams":       "upstream",
}

// Values Kong accepts (3.x).
var (
	serviceProtocols = set("grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp", "ws", "wss")
	routeProtocols   = serviceProtocols
	redirectCodes    = map[int64]bool{426: true, 301: true, 302: true, 307: true, 308: true}
	algorithms       = set("round-robin", "consistent-hashing", "least-connections", "latency", "sticky-sessions")
	pathHandlings    = set("v0", "v1")
	httpMethodsOK    = func(s string) bool {
		for _, r := range s {
			if r < 'A' || r > 'Z' {
				return false
			}
		}
		return s != ""
	}
)

// bundledPlugins are the plugins of Kong 3.x OSS plus the Enterprise ones
// that appear in KIC's golden outputs; others are "not enabled" unless added
// with WithPlugins.
var bundledPlugins = set(
	"acl", "acme", "ai-prompt-decorator", "ai-prompt-guard", "ai-prompt-template", "ai-proxy",
	"ai-request-transformer", "ai-response-transformer", "aws-lambda", "azure-functions", "basic-auth",
	"bot-detection", "correlation-id", "cors", "datadog", "file-log", "grpc-gateway", "grpc-web",
	"hmac-auth", "http-log", "ip-restriction", "jwt", "key-auth", "ldap-auth", "loggly", "oauth2",
	"opentelemetry", "post-function", "pre-function", "prometheus", "proxy-cache", "rate-limiting",
	"redirect", "request-size-limiting", "request-termination", "request-transformer",
	"response-ratelimiting", "response-transformer", "session", "standard-webhooks", "statsd", "syslog",
	"tcp-log", "udp-log", "zipkin",
)

// enterprisePlugins are accepted unless WithOSS is set.
var enterprisePlugins = set("degraphql", "openid-connect", "rate-limiting-advanced", "request-validator",
	"mtls-auth", "oas-validation", "graphql-rate-limiting-advanced", "request-transformer-advanced",
	"response-transformer-advanced", "exit-transformer", "canary", "forward-proxy", "jq", "key-auth-enc",
	"opa", "proxy-cache-advanced", "vault-auth")
