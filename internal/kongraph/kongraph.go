package kongraph

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// collections maps a top-level key to its entities' type, Kong's schema name:
// the key less its "s", but credentials and degraphql_routes stay plural.
var collections = map[string]string{}

// credentials are the consumer's credential collections.
var credentials = []string{"keyauth_credentials", "basicauth_credentials", "hmacauth_credentials",
	"jwt_secrets", "acls", "mtls_auth_credentials", "oauth2_credentials"}

// nested maps a type to its nested collections' keys and the foreign key
// each nesting stands for (init adds a consumer's credentials).
var nested = map[string]map[string]string{
	"service":        {"routes": "service", "plugins": "service", "filter_chains": "service", "degraphql_routes": "service"},
	"route":          {"plugins": "route", "filter_chains": "route"},
	"consumer":       {"plugins": "consumer", "groups": "consumer"},
	"consumer_group": {"plugins": "consumer_group", "consumers": "consumer_group"},
	"upstream":       {"targets": "upstream"},
	"certificate":    {"snis": "certificate"},
	"key_set":        {"keys": "set"},
}

// refs are each type's foreign keys: field -> type (init adds a credential's consumer).
var refs = map[string]map[string]string{
	"route":                   {"service": "service"},
	"plugin":                  {"service": "service", "route": "route", "consumer": "consumer", "consumer_group": "consumer_group"},
	"target":                  {"upstream": "upstream"},
	"sni":                     {"certificate": "certificate"},
	"service":                 {"client_certificate": "certificate", "ca_certificates": "ca_certificate"},
	"upstream":                {"client_certificate": "certificate"},
	"consumer_group_consumer": {"consumer": "consumer", "consumer_group": "consumer_group"},
	"degraphql_routes":        {"service": "service"},
	"key":                     {"set": "key_set"},
	"filter_chain":            {"service": "service", "route": "route"},
}

// nestedKeys and refFields are nested's and refs' keys, sorted.
var nestedKeys, refFields = map[string][]string{}, map[string][]string{}

func init() {
	for _, k := range []string{"services", "routes", "plugins", "consumers", "consumer_groups", "consumer_group_consumers",
		"upstreams", "targets", "certificates", "snis", "ca_certificates", "vaults", "key_sets", "keys", "filter_chains"} {
		collections[k] = strings.TrimSuffix(k, "s")
	}
	for _, k := range append(credentials, "degraphql_routes") {
		collections[k] = k
	}
	for _, c := range credentials {
		nested["consumer"][c] = "consumer"
		refs[c] = map[string]string{"consumer": "consumer"}
	}
	for typ, kids := range nested {
		nestedKeys[typ] = slices.Sorted(maps.Keys(kids))
	}
	for typ, fields := range refs {
		refFields[typ] = slices.Sorted(maps.Keys(fields))
	}
}

// CollectionType is a top-level collection's entities' type ("route" for "routes"), or "".
func CollectionType(key string) string { return collections[key] }

// ChildType is the type nested under parentType at key (groups, consumers: memberships).
func ChildType(parentType, key string) string {
	if (parentType == "consumer" && key == "groups") || (parentType == "consumer_group" && key == "consumers") {
		return "consumer_group_consumer"
	}
	return collections[key]
}

// Entity is one entity of a configuration.
type Entity struct {
	Type  string // Kong's schema name ("route", "keyauth_credentials", ...)
	ID    string
	Name  string // its endpoint key: name, a consumer's username, ...
	Tags  []string
	Index int // its position in walk order
}

// Key names the entity for people: "route foo", "plugin 1b2c...".
func (e Entity) Key() string {
	if n := cmp.Or(e.Name, e.ID); n != "" {
		return e.Type + " " + n
	}
	return fmt.Sprintf("%s #%d", e.Type, e.Index)
}

type node struct {
	Entity
	obj         map[string]any
	parent      *node  // the entity this one is nested in (nil at the top)
	parentField string // the foreign key the nesting stands for
}

// Doc is a parsed declarative configuration and its entity graph; it is never modified.
type Doc struct {
	raw         []byte
	nodes       []*node
	byID, byKey map[fk]*node // the first entity of a type by id, by name
}

// Parse reads a declarative configuration (JSON) and its entities.
func Parse(raw []byte) (*Doc, error) {
	root, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("kongraph: %w", err)
	}
	d := &Doc{raw: raw, byID: map[fk]*node{}, byKey: map[fk]*node{}}
	walk(root, func(n *node) {
		n.Index = len(d.nodes)
		d.nodes = append(d.nodes, n)
		if _, dup := d.byID[fk{n.Type, n.ID}]; !dup && n.ID != "" {
			d.byID[fk{n.Type, n.ID}] = n
		}
		if _, dup := d.byKey[fk{n.Type, n.Name}]; !dup && n.Name != "" {
			d.byKey[fk{n.Type, n.Name}] = n
		}
	})
	return d, nil
}

// Decode reads a declarative configuration (JSON, numbers as json.Number).
func Decode(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	if root == nil {
		return nil, errors.New("the configuration is not a JSON object")
	}
	return root, nil
}

// walk visits every entity as a node, in Walk's order.
func walk(root map[string]any, visit func(*node)) {
	Walk(root, func(typ string, obj map[string]any, parent *node, parentField string) *node {
		n := &node{Entity: Identify(typ, obj), obj: obj, parent: parent, parentField: parentField}
		visit(n)
		return n
	})
}

// Walk visits every entity of a decoded configuration, collections sorted by
// key, each entity before its nested ones: visit gets the type, what visit
// returned for the parent (zero at the top) and the foreign key it stands for.
func Walk[T any](root map[string]any, visit func(typ string, obj map[string]any, parent T, parentField string) T) {
	var top T
	for _, key := range slices.Sorted(maps.Keys(root)) {
		typ, ok := collections[key]
		if !ok {
			continue
		}
		list, _ := root[key].([]any)
		for _, v := range list {
			if obj, ok := v.(map[string]any); ok {
				walkEntity(typ, obj, top, "", visit)
			}
		}
	}
}

func walkEntity[T any](typ string, obj map[string]any, parent T, parentField string, visit func(string, map[string]any, T, string) T) {
	n := visit(typ, obj, parent, parentField)
	kids := nested[typ]
	for _, key := range nestedKeys[typ] {
		field := kids[key]
		list, _ := obj[key].([]any)
		ct := ChildType(typ, key)
		for _, v := range list {
			if o, ok := v.(map[string]any); ok {
				walkEntity(ct, o, n, field, visit)
			}
		}
	}
}

// NestedKeys are the keys under which typ nests others, sorted.
func NestedKeys(typ string) []string { return nestedKeys[typ] }

// ForeignKey is the type field of a typ refers to, or "" when it is no foreign key.
func ForeignKey(typ, field string) string { return refs[typ][field] }

// ForeignKeys are the foreign key fields of type typ, sorted.
func ForeignKeys(typ string) []string { return refFields[typ] }

// Identify is obj, an entity of type typ, as Entity (Index unset).
func Identify(typ string, obj map[string]any) Entity {
	e := Entity{Type: typ, ID: str(obj["id"])}
	switch typ {
	case "consumer":
		e.Name = cmp.Or(str(obj["username"]), str(obj["custom_id"]))
	case "target":
		e.Name = str(obj["target"])
	case "keyauth_credentials", "jwt_secrets":
		e.Name = str(obj["key"])
	case "basicauth_credentials", "hmacauth_credentials":
		e.Name = str(obj["username"])
	case "acls":
		e.Name = str(obj["group"])
	case "oauth2_credentials":
		e.Name = str(obj["client_id"])
	case "vault":
		e.Name = str(obj["prefix"])
	default:
		e.Name = str(obj["name"])
	}
	if tags, ok := obj["tags"].([]any); ok {
		for _, t := range tags {
			if s, ok := t.(string); ok {
				e.Tags = append(e.Tags, s)
			}
		}
	}
	return e
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// Find returns the index of the entity a gateway's error names: by id, else name, any spelling.
func (d *Doc) Find(typ, id, name string) (int, bool) {
	for _, t := range typeSpellings(typ) {
		if id != "" {
			if n := d.byID[fk{t, id}]; n != nil {
				return n.Index, true
			}
		}
		if name != "" {
			if n := d.byKey[fk{t, name}]; n != nil {
				return n.Index, true
			}
		}
	}
	return 0, false
}

// typeSpellings are the types an error's entity_type may mean: Kong's
// schema names, and the collection keys (referenceErrors trims an "s").
func typeSpellings(typ string) []string {
	out := []string{typ}
	if t, ok := collections[typ]; ok {
		out = append(out, t)
	}
	if t, ok := collections[typ+"s"]; ok {
		out = append(out, t)
	}
	return out
}

// deps are n's parent and what its foreign keys resolve to.
func (d *Doc) deps(n *node) []*node {
	var out []*node
	if n.parent != nil {
		out = append(out, n.parent)
	}
	for _, r := range foreignKeys(n) {
		if t := d.resolve(r.typ, r.value); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// fk is one foreign key value: the referenced type and its id or name.
type fk struct{ typ, value string }

// foreignKeys are n's own foreign keys (Refs), in field order.
func foreignKeys(n *node) []fk {
	var parentType string
	if n.parent != nil {
		parentType = n.parent.Type
	}
	r := Refs(n.Type, n.obj, parentType, n.parentField)
	var out []fk
	for _, field := range refFields[n.Type] {
		for _, v := range r[field] {
			out = append(out, fk{refs[n.Type][field], v})
		}
	}
	return out
}

// Refs are the foreign keys (field -> values) of obj, of type typ, nested
// in a parentType ("" at the top level) at parentField, which is none of
// them; a nested membership is itself the reference to the other side.
func Refs(typ string, obj map[string]any, parentType, parentField string) map[string][]string {
	if typ == "consumer_group_consumer" && parentType != "" {
		other := "consumer_group"
		if parentType == "consumer_group" {
			other = "consumer"
		}
		return map[string][]string{other: RefValues(obj)}
	}
	var out map[string][]string
	for _, field := range refFields[typ] {
		if v := RefValues(obj[field]); len(v) > 0 && (field != parentField || parentType == "") {
			if out == nil {
				out = map[string][]string{}
			}
			out[field] = v
		}
	}
	return out
}

// RefValues reads a foreign key: "name-or-id", {"id": ...}, {"name": ...}
// ({"username": ...} for a consumer), or a list of them (ca_certificates).
func RefValues(v any) []string {
	switch r := v.(type) {
	case string:
		if r != "" {
			return []string{r}
		}
	case map[string]any:
		for _, k := range []string{"id", "name", "username"} {
			if s := str(r[k]); s != "" {
				return []string{s}
			}
		}
	case []any:
		var out []string
		for _, x := range r {
			out = append(out, RefValues(x)...)
		}
		return out
	}
	return nil
}

func (d *Doc) resolve(typ, ref string) *node {
	if n := d.byID[fk{typ, ref}]; n != nil {
		return n
	}
	return d.byKey[fk{typ, ref}]
}
