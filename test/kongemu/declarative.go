package kongemu

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// EmptyHash is the configuration_hash of a gateway with no configuration
// (Kong reports 32 zeros after a start or restart in DB-less mode).
const EmptyHash = "00000000000000000000000000000000"

// FlattenedError is one entry of Kong's flattened_errors.
type FlattenedError struct {
	EntityType string         `json:"entity_type"`
	EntityName string         `json:"entity_name,omitempty"`
	EntityID   string         `json:"entity_id,omitempty"`
	EntityTags []string       `json:"entity_tags"`
	Entity     map[string]any `json:"entity"`
	Errors     []FieldError   `json:"errors"`
}

// FieldError is one error of an entity: type "field" (with Field) or
// "entity".
type FieldError struct {
	Type    string `json:"type"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ErrorBody is Kong's 400 answer to an invalid declarative configuration.
type ErrorBody struct {
	Name            string           `json:"name"`
	Code            int              `json:"code"`
	Message         string           `json:"message"`
	Fields          map[string]any   `json:"fields"`
	FlattenedErrors []FlattenedError `json:"flattened_errors,omitempty"`

	// refs are the reference errors as Kong's validate_references keys
	// them: collection -> the entity's endpoint key (or id, or position)
	// -> messages.
	refs map[string]map[string][]any
	// topArrays are the collections given as top-level lists.
	topArrays map[string]bool
	// flattened: the answer to flatten_errors=1 (see render).
	flattened bool
	// unparsed: the body is not a configuration; Kong answers before
	// validating, never flattened.
	unparsed bool
}

// render is the answer to one request, as kong/api/routes/config.lua and
// kong/db/errors.lua (3.9.1) build it. With flatten, flattened_errors
// holds the entity errors and fields what flatten_errors could not place:
// top-level problems and the reference errors of a collection the input
// has only nested. The reference errors of a collection given as a
// top-level list are keyed by the entity's name or id, which
// flatten_errors looks up as a list position: it finds nothing and drops
// them (they are in neither fields nor flattened_errors). An empty
// flattened_errors is encoded as {} (Kong's cjson default; a JSON array
// only from Kong 3.10, Kong/kong#14019). Without flatten, fields holds
// every error, nested by collection. The message is Kong's pretty print
// of fields.
func (b *ErrorBody) render(flatten bool) ErrorBody {
	out := *b
	if b.unparsed {
		return out
	}
	out.flattened = flatten
	fields := map[string]any{}
	if flatten {
		for k, v := range b.Fields {
			fields[k] = v
		}
	} else {
		out.FlattenedErrors = nil
		fields = nestedFields(b)
	}
	for coll, byKey := range b.refs {
		if flatten && b.topArrays[coll] {
			continue
		}
		sec, _ := fields[coll].(map[string]any)
		if sec == nil {
			sec = map[string]any{}
			fields[coll] = sec
		}
		for k, msgs := range byKey {
			sec[k] = msgs
		}
	}
	out.Fields = fields
	out.Message = "declarative config is invalid: " + plPretty(fields)
	return out
}

// MarshalJSON writes flattened_errors only in a flatten_errors answer,
// as {} when there are none (Kong 3.9's encoding of an empty table).
func (b ErrorBody) MarshalJSON() ([]byte, error) {
	type plain ErrorBody
	if !b.flattened {
		b.FlattenedErrors = nil
		return json.Marshal(plain(b))
	}
	if len(b.FlattenedErrors) > 0 {
		return json.Marshal(plain(b))
	}
	return json.Marshal(struct {
		plain
		FlattenedErrors struct{} `json:"flattened_errors"`
	}{plain: plain(b)})
}

// UnmarshalJSON reads Kong's answer, whose flattened_errors may be {}.
func (b *ErrorBody) UnmarshalJSON(data []byte) error {
	type plain ErrorBody
	var raw struct {
		plain
		FlattenedErrors json.RawMessage `json:"flattened_errors"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*b = ErrorBody(raw.plain)
	b.FlattenedErrors = nil
	if t := bytes.TrimSpace(raw.FlattenedErrors); len(t) > 0 && t[0] == '[' {
		return json.Unmarshal(t, &b.FlattenedErrors)
	}
	return nil
}

// plPretty renders errors the way Kong's messages do (pl.pretty.write
// with no indent): {routes={["my-route"]={"invalid reference ..."}}}.
func plPretty(v any) string {
	switch x := v.(type) {
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			key := k
			if !luaIdentRE.MatchString(k) {
				key = "[" + strconv.Quote(k) + "]"
			}
			parts = append(parts, key+"="+plPretty(x[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = plPretty(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []string:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = strconv.Quote(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case string:
		return strconv.Quote(x)
	default:
		return fmt.Sprint(x)
	}
}

var luaIdentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Kong's error code for an invalid declarative configuration
// (kong/db/errors.lua, INVALID_DECLARATIVE_CONFIGURATION).
const codeInvalidDeclarative = 14

// ConfigHash is the configuration_hash the emulator reports after loading
// body (JSON or YAML): the MD5 (hex) of the configuration's canonical JSON
// form, i.e. the body decoded and re-encoded by encoding/json (object keys
// sorted, numbers kept as written, no HTML escaping, no insignificant
// space). Like Kong's own hash (an MD5 over its canonical form of the
// parsed configuration), it does not depend on formatting, key order or
// JSON versus YAML. It returns "" when body is neither JSON nor YAML.
func ConfigHash(body []byte) string {
	v, err := decode(body)
	if err != nil {
		return ""
	}
	if m, ok := v.(map[string]any); ok {
		if c, isStr := m["config"].(string); isStr && m["_format_version"] == nil {
			return ConfigHash([]byte(c))
		}
	}
	h, _, err := canonicalHash(v)
	if err != nil {
		return ""
	}
	return h
}

func decode(body []byte) (any, error) {
	js := body
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 {
		return nil, fmt.Errorf("the body is empty")
	}
	if t[0] != '{' && t[0] != '[' {
		var err error
		js, err = yaml.YAMLToJSON(body)
		if err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not valid JSON: data after the top-level value")
	}
	return v, nil
}

func canonicalHash(v any) (string, []byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", nil, err
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), b, nil
}

// Result is the outcome of checking one declarative configuration.
type Result struct {
	// Hash is ConfigHash of the configuration ("" when invalid).
	Hash string
	// Counts is the number of entities per collection key, nested ones
	// included (e.g. "routes": 3).
	Counts map[string]int
	// Invalid is Kong's 400 body when the configuration is rejected.
	Invalid *ErrorBody
	// Loaded is the 201 answer: Kong answers with every loaded entity, so
	// the emulator answers with the configuration in its canonical JSON
	// form, an answer of the same order of size.
	Loaded []byte
	// tags are the loaded entities' tags, GET /tags's rows.
	tags []map[string]any
}

// entity is one flattened entity.
type entity struct {
	def  *entityDef
	data map[string]any
	// implicit references from nesting (field -> parent entity).
	parent map[string]*entity
	errs   []FieldError
	// now is the time of the checks that depend on it (zero: skipped).
	now time.Time
}

func (e *entity) fieldErr(field, msg string) {
	e.errs = append(e.errs, FieldError{Type: "field", Field: field, Message: msg})
}

func (e *entity) entityErr(msg string) {
	e.errs = append(e.errs, FieldError{Type: "entity", Message: msg})
}

func (e *entity) str(f string) string {
	s, _ := e.data[f].(string)
	return s
}

func (e *entity) name() string {
	for _, n := range e.def.names {
		if s := e.str(n); s != "" {
			return s
		}
	}
	return ""
}

// Check parses and validates a declarative configuration the way the
// emulated POST /config does; oss rejects Enterprise entities and plugins,
// plugins extends the set of known plugin names.
func check(v any, o checkOptions) Result {
	top, ok := v.(map[string]any)
	if !ok {
		return invalid(map[string]any{"@entity": []string{"expected a table"}}, nil)
	}
	fields := map[string]any{}
	fv, has := top["_format_version"]
	switch s, isStr := fv.(string); {
	case !has:
		fields["_format_version"] = "required field missing"
	case !isStr:
		fields["_format_version"] = "expected a string"
	case s != "1.1" && s != "2.1" && s != "3.0":
		fields["_format_version"] = "expected one of: 1.1, 2.1, 3.0"
	}

	var all []*entity
	byKey := map[string][]*entity{}
	topArrays := map[string]bool{}
	refs := map[string]map[string][]any{}
	var add func(key string, list any, parent *entity, path string)
	add = func(key string, list any, parent *entity, path string) {
		def := defsByKey[key]
		arr, ok := list.([]any)
		if !ok {
			fields[path] = "expected an array"
			return
		}
		for i, item := range arr {
			m, ok := item.(map[string]any)
			if !ok {
				fields[fmt.Sprintf("%s.%d", path, i+1)] = "expected a record"
				continue
			}
			e := &entity{def: def, data: make(map[string]any, len(m))}
			type nested struct {
				key  string
				list any
			}
			var kids []nested
			for k, val := range m {
				if child, isChild := def.children[k]; isChild {
					if _, isArr := val.([]any); isArr {
						kids = append(kids, nested{child, val})
						continue
					}
				}
				e.data[k] = val
			}
			if parent != nil {
				if f, ok := parentRef[parent.def.key]; ok {
					e.parent = map[string]*entity{f: parent}
				}
			}
			all = append(all, e)
			byKey[key] = append(byKey[key], e)
			sort.Slice(kids, func(a, b int) bool { return kids[a].key < kids[b].key })
			for _, k := range kids {
				add(k.key, k.list, e, fmt.Sprintf("%s.%d.%s", path, i+1, k.key))
			}
		}
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "_") {
			continue // _format_version, _transform, _comment, _info...
		}
		def, ok := defsByKey[k]
		if !ok || (o.oss && def.enterprise) {
			fields[k] = "unknown field"
			continue
		}
		if _, isList := top[k].([]any); isList {
			topArrays[k] = true
		}
		add(k, top[k], nil, k)
	}

	// Index ids and names per collection; duplicates are errors.
	type index struct {
		ids   map[string]*entity
		names map[string]*entity
	}
	idx := map[string]*index{}
	for _, key := range sortedKeys(byKey) {
		ix := &index{ids: map[string]*entity{}, names: map[string]*entity{}}
		idx[key] = ix
		for _, e := range byKey[key] {
			if id, ok := e.data["id"].(string); ok && id != "" {
				if !uuidRE.MatchString(id) {
					e.fieldErr("id", "expected a valid UUID")
				} else if _, dup := ix.ids[id]; dup {
					e.entityErr(fmt.Sprintf("uniqueness violation: '%s' entity with primary key set to '%s' already declared", key, id))
				} else {
					ix.ids[id] = e
				}
			}
			for _, n := range e.def.names {
				s := e.str(n)
				if s == "" {
					continue
				}
				if _, dup := ix.names[s]; dup {
					e.entityErr(fmt.Sprintf("uniqueness violation: '%s' entity with %s set to '%s' already declared", key, n, s))
				} else {
					ix.names[s] = e
				}
			}
		}
	}
	// Kong gives a plugin without an id one derived from its cache key
	// (name and scope), so two such plugins in one scope collide on the
	// primary key (kong/db/schema/others/declarative_config.lua); plugins
	// with their own ids do not.
	seenPlugin := map[string]bool{}
	for _, e := range byKey["plugins"] {
		if e.str("id") != "" {
			continue
		}
		key := e.str("name")
		for _, f := range []string{"service", "route", "consumer", "consumer_group"} {
			key += "|" + scopeKey(e, f)
		}
		if seenPlugin[key] {
			e.entityErr(fmt.Sprintf("uniqueness violation: 'plugins' entity with primary key set to '%s' already declared", derivedID(key)))
		}
		seenPlugin[key] = true
	}
	resolve := func(coll string, ref any) (string, bool) {
		var want string
		switch r := ref.(type) {
		case string:
			want = r
		case map[string]any:
			for _, f := range []string{"id", "name", "username"} {
				if s, ok := r[f].(string); ok && s != "" {
					want = s
					break
				}
			}
		}
		if want == "" {
			return "", false
		}
		ix := idx[coll]
		if ix == nil {
			return want, false
		}
		if _, ok := ix.ids[want]; ok {
			return want, true
		}
		_, ok := ix.names[want]
		return want, ok
	}

	position := map[*entity]int{}
	for _, list := range byKey {
		for i, e := range list {
			position[e] = i + 1
		}
	}
	for _, e := range all {
		checkFields(e, o)
		refFields := make([]string, 0, len(e.def.refs))
		for f := range e.def.refs {
			refFields = append(refFields, f)
		}
		sort.Strings(refFields)
		for _, f := range refFields {
			ref, has := e.data[f]
			if !has || ref == nil {
				continue
			}
			if _, nested := e.parent[f]; nested {
				continue // nesting decides the reference
			}
			if want, ok := resolve(e.def.refs[f], ref); !ok {
				if want == "" {
					e.fieldErr(f, "expected a string or a record with an id or a name")
				} else {
					// kong/db/schema/others/declarative_config.lua
					// validate_references: keyed by the entity's endpoint
					// key, else its id, else its position.
					shown, isStr := ref.(string)
					if !isStr {
						b, _ := json.Marshal(ref)
						shown = string(b)
					}
					at := refKey(e, position[e])
					if refs[e.def.key] == nil {
						refs[e.def.key] = map[string][]any{}
					}
					refs[e.def.key][at] = append(refs[e.def.key][at],
						fmt.Sprintf("invalid reference '%s: %s' (no such entry in '%s')", f, shown, e.def.refs[f]))
				}
			}
		}
	}

	counts := map[string]int{}
	var flat []FlattenedError
	for _, e := range all {
		counts[e.def.key]++
		if len(e.errs) == 0 {
			continue
		}
		tags := []string{}
		if ts, ok := e.data["tags"].([]any); ok {
			for _, t := range ts {
				if s, ok := t.(string); ok {
					tags = append(tags, s)
				}
			}
		}
		id, _ := e.data["id"].(string)
		flat = append(flat, FlattenedError{
			EntityType: e.def.typ, EntityName: e.name(), EntityID: id,
			EntityTags: tags, Entity: e.data, Errors: e.errs,
		})
	}
	if len(fields) > 0 || len(flat) > 0 || len(refs) > 0 {
		r := invalid(fields, flat)
		r.Invalid.refs, r.Invalid.topArrays = refs, topArrays
		return r
	}
	h, loaded, err := canonicalHash(v)
	if err != nil {
		return invalid(map[string]any{"@entity": []string{err.Error()}}, nil)
	}
	return Result{Hash: h, Counts: counts, Loaded: loaded, tags: entityTags(all)}
}

// derivedID is a stable UUID-shaped id for a cache key (Kong derives a
// UUIDv5 from its own namespace; the value differs, the shape does not).
func derivedID(key string) string {
	sum := md5.Sum([]byte(key))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// refKey is how Kong's validate_references keys an entity's errors: its
// endpoint key (the first name field), else its id, else its position.
func refKey(e *entity, pos int) string {
	if len(e.def.names) > 0 {
		if s := e.str(e.def.names[0]); s != "" {
			return s
		}
	}
	if id := e.str("id"); id != "" {
		return id
	}
	return strconv.Itoa(pos)
}

// scopeKey identifies what reference field f of e points at: its parent
// when nested, else the reference as written.
func scopeKey(e *entity, f string) string {
	if p, ok := e.parent[f]; ok {
		return fmt.Sprintf("parent:%p", p)
	}
	switch r := e.data[f].(type) {
	case string:
		return "ref:" + r
	case map[string]any:
		for _, k := range []string{"id", "name", "username"} {
			if s, ok := r[k].(string); ok && s != "" {
				return "ref:" + s
			}
		}
	}
	return ""
}

type checkOptions struct {
	oss     bool
	plugins map[string]bool
}

func invalid(fields map[string]any, flat []FlattenedError) Result {
	return Result{Invalid: &ErrorBody{
		Name:            "invalid declarative configuration",
		Code:            codeInvalidDeclarative,
		Message:         "declarative config is invalid: " + plPretty(fields),
		Fields:          fields,
		FlattenedErrors: flat,
	}}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// checkFields runs the field rules of e's type.
func checkFields(e *entity, o checkOptions) {
	d := e.def
	if d.fields != nil {
		for _, k := range sortedKeys(e.data) {
			if !d.fields[k] {
				e.fieldErr(k, "unknown field")
			}
		}
	}
	if t, ok := e.data["tags"]; ok && t != nil {
		if !isStringArray(t) {
			e.fieldErr("tags", "expected a set of strings")
		}
	}
	if d.typ != "plugin" {
		checkRules(e)
	} else {
		name := e.str("name")
		switch {
		case name == "":
			e.fieldErr("name", "required field missing")
		case bundledPlugins[name] || o.plugins[name] || (!o.oss && enterprisePlugins[name]):
		default:
			e.fieldErr("name", fmt.Sprintf("plugin '%s' not enabled; add it to the 'plugins' configuration property", name))
		}
		if c, ok := e.data["config"]; ok && c != nil {
			cfg, isMap := c.(map[string]any)
			if !isMap {
				e.fieldErr("config", "expected a record")
			} else if ps := pluginSchemas[name]; ps != nil {
				checkPluginConfig(e, ps, cfg)
			}
		}
	}
	// An entity given at the top level must name its owner (nested ones get
	// it from their parent).
	if owner := ownerRef[d.typ]; owner != "" {
		if _, nested := e.parent[owner]; !nested && e.data[owner] == nil {
			e.fieldErr(owner, "required field missing")
		}
	}
}

// checkRules runs the field and entity rules of e's type (not plugins',
// whose config has its own schema): the same in a declarative
// configuration and on the entity API.
func checkRules(e *entity) {
	switch e.def.typ {
	case "service":
		checkService(e)
	case "route":
		checkRoute(e)
		checkRegexPaths(e)
	case "consumer":
		if e.str("username") == "" && e.str("custom_id") == "" {
			e.entityErr("at least one of these fields must be non-empty: 'custom_id', 'username'")
		}
	case "upstream":
		if e.str("name") == "" {
			e.fieldErr("name", "required field missing")
		}
		if a, ok := e.data["algorithm"]; ok {
			if s, _ := a.(string); !algorithms[s] {
				e.fieldErr("algorithm", "expected one of: consistent-hashing, latency, least-connections, round-robin, sticky-sessions")
			}
		}
		checkInt(e, "slots", 10, 65536)
	case "target":
		if e.str("target") == "" {
			e.fieldErr("target", "required field missing")
		}
		checkInt(e, "weight", 0, 65535)
	case "certificate":
		checkCertificate(e)
	case "ca_certificate":
		checkCACertificate(e)
	case "key":
		checkKey(e)
	case "sni":
		if e.str("name") == "" {
			e.fieldErr("name", "required field missing")
		}
	case "acl":
		if e.str("group") == "" {
			e.fieldErr("group", "required field missing")
		}
	case "basicauth_credential":
		for _, f := range []string{"username", "password"} {
			if e.str(f) == "" {
				e.fieldErr(f, "required field missing")
			}
		}
	case "hmacauth_credential":
		if e.str("username") == "" {
			e.fieldErr("username", "required field missing")
		}
	}
}

// ownerRef is the reference an entity cannot exist without.
var ownerRef = map[string]string{
	"acl": "consumer", "basicauth_credential": "consumer", "keyauth_credential": "consumer",
	"hmacauth_credential": "consumer", "jwt_secret": "consumer", "oauth2_credential": "consumer",
	"mtls_auth_credential": "consumer", "target": "upstream", "sni": "certificate",
	"consumer_group_consumer": "consumer",
}

func checkService(e *entity) {
	if u := e.str("url"); u != "" {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme == "" || pu.Host == "" {
			e.fieldErr("url", "missing host in url")
			return
		}
		if !serviceProtocols[pu.Scheme] {
			e.fieldErr("protocol", "expected one of: grpc, grpcs, http, https, tcp, tls, tls_passthrough, udp, ws, wss")
		}
		return
	}
	if e.str("host") == "" {
		e.fieldErr("host", "required field missing")
	}
	proto := "http"
	if p, ok := e.data["protocol"]; ok {
		s, _ := p.(string)
		if !serviceProtocols[s] {
			e.fieldErr("protocol", "expected one of: grpc, grpcs, http, https, tcp, tls, tls_passthrough, udp, ws, wss")
		}
		proto = s
	}
	checkInt(e, "port", 0, 65535)
	checkInt(e, "retries", 0, 32767)
	for _, f := range []string{"connect_timeout", "read_timeout", "write_timeout"} {
		checkInt(e, f, 1, 2147483646)
	}
	if p, ok := e.data["path"]; ok && p != nil {
		s, _ := p.(string)
		switch {
		case !strings.HasPrefix(s, "/"):
			e.fieldErr("path", "should start with: /")
		case proto != "http" && proto != "https" && proto != "ws" && proto != "wss" && proto != "grpc" && proto != "grpcs":
			e.entityErr(fmt.Sprintf("value must be null when 'protocol' is '%s'", proto))
		}
	}
}

func checkRoute(e *entity) {
	protos := []string{"http", "https"}
	if p, ok := e.data["protocols"]; ok && p != nil {
		if !isStringArray(p) {
			e.fieldErr("protocols", "expected a set")
			return
		}
		protos = protos[:0]
		for _, x := range p.([]any) {
			s := x.(string)
			if !routeProtocols[s] {
				e.fieldErr("protocols", "expected one of: grpc, grpcs, http, https, tcp, tls, tls_passthrough, udp, ws, wss")
				return
			}
			protos = append(protos, s)
		}
	}
	for _, f := range []string{"methods", "hosts", "paths", "snis", "protocols"} {
		if v, ok := e.data[f]; ok && v != nil && !isStringArray(v) {
			e.fieldErr(f, "expected a set")
		}
	}
	if m, ok := e.data["methods"].([]any); ok {
		for _, x := range m {
			if s, _ := x.(string); !httpMethodsOK(s) {
				e.fieldErr("methods", fmt.Sprintf("invalid value: %v", x))
			}
		}
	}
	if p, ok := e.data["paths"].([]any); ok {
		for _, x := range p {
			if s, _ := x.(string); !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~") {
				e.fieldErr("paths", "should start with: / (fixed path) or ~/ (regex path)")
				break
			}
		}
	}
	if c, ok := e.data["https_redirect_status_code"]; ok && c != nil {
		if n, ok := asInt(c); !ok || !redirectCodes[n] {
			e.fieldErr("https_redirect_status_code", "expected one of: 426, 301, 302, 307, 308")
		}
	}
	if ph, ok := e.data["path_handling"]; ok && ph != nil {
		if s, _ := ph.(string); !pathHandlings[s] {
			e.fieldErr("path_handling", "expected one of: v0, v1")
		}
	}
	checkInt(e, "regex_priority", -2147483648, 2147483647)
	if e.str("expression") != "" {
		return // an expressions-flavor route matches by its expression
	}
	has := func(fs ...string) bool {
		for _, f := range fs {
			switch v := e.data[f].(type) {
			case []any:
				if len(v) > 0 {
					return true
				}
			case map[string]any:
				if len(v) > 0 {
					return true
				}
			}
		}
		return false
	}
	for _, p := range protos {
		switch p {
		case "http", "ws":
			if !has("methods", "hosts", "headers", "paths") {
				e.entityErr(fmt.Sprintf("must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is '%s'", p))
				return
			}
		case "https", "wss":
			if !has("methods", "hosts", "headers", "paths", "snis") {
				e.entityErr(fmt.Sprintf("must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is '%s'", p))
				return
			}
		case "grpc", "grpcs":
			if !has("hosts", "headers", "paths") {
				e.entityErr(fmt.Sprintf("must set one of 'hosts', 'headers', 'paths' when 'protocols' is '%s'", p))
				return
			}
		case "tcp", "tls", "udp":
			if !has("sources", "destinations", "snis") {
				e.entityErr(fmt.Sprintf("must set one of 'sources', 'destinations', 'snis' when 'protocols' is '%s'", p))
				return
			}
		case "tls_passthrough":
			if !has("snis") {
				e.entityErr("must set snis when 'protocols' is 'tls_passthrough'")
				return
			}
		}
	}
}

func checkInt(e *entity, f string, lo, hi int64) {
	v, ok := e.data[f]
	if !ok || v == nil {
		return
	}
	n, ok := asInt(v)
	if !ok {
		e.fieldErr(f, "expected an integer")
		return
	}
	if n < lo || n > hi {
		e.fieldErr(f, fmt.Sprintf("value should be between %d and %d", lo, hi))
	}
}

// asInt reads an integer as a declarative configuration (json.Number)
// or the entity API (float64) decodes it.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}

func isStringArray(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range a {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// checkPluginConfig checks a plugin's config against the plugin's schema
// (the plugins kongplugins.go has): unknown fields, types, one_of,
// required fields. Kong reports each as a field error at its dotted path,
// e.g. {type = "field", field = "config.foo", message = "unknown field"}.
func checkPluginConfig(e *entity, ps *pluginSchema, cfg map[string]any) {
	rec := configField(ps)
	if rec == nil {
		return
	}
	fc := &fillContext{errs: fieldErrors{}}
	// JSON numbers arrive as json.Number here; the checks want float64.
	fillRecord(rec, asFloats(cfg).(map[string]any), fc, []string{"config"})
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range sortedKeys(m) {
			switch v := m[k].(type) {
			case map[string]any:
				walk(prefix+k+".", v)
			default:
				e.fieldErr(strings.TrimSuffix(prefix+k, "."), fmt.Sprint(v))
			}
		}
	}
	walk("", fc.errs)
}

// asFloats converts the json.Number values of a decoded document to
// float64.
func asFloats(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = asFloats(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = asFloats(e)
		}
		return out
	default:
		return v
	}
}
