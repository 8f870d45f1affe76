package configdiff

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/confighub/confighub/internal/kongraph"
	"github.com/confighub/confighub/internal/redact"
)

// Action is what a change does to an entity.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
)

// Entity names one entity for people; no field is a secret (a key-auth credential shows no name).
type Entity struct {
	Type   string   `json:"type"`           // Kong's entity type ("service", "keyauth_credential", ...)
	Name   string   `json:"name,omitempty"` // its endpoint key (name, username, target, group), if one to show
	ID     string   `json:"id,omitempty"`
	Parent string   `json:"parent,omitempty"` // what it belongs to ("service echo" for a route), if any
	Tags   []string `json:"tags,omitempty"`   // its k8s-* tags, which name its Kubernetes object
}

// String is "route r1", "plugin cors (route r1)", "keyauth_credential (consumer alice)".
func (e Entity) String() string {
	s := e.Type
	if n := cmp.Or(e.Name, e.ID); n != "" {
		s += " " + n
	}
	if e.Parent != "" {
		s += " (" + e.Parent + ")"
	}
	return s
}

// Field is one changed field of an updated entity: Old and New are the JSON
// values, redacted as GetConfig redacts them (nil: absent on that side).
type Field struct {
	Path []string        `json:"path"` // keys down to the value; a list is compared whole
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// Change is one entity created, deleted or updated.
type Change struct {
	Action Action          `json:"action"`
	Entity Entity          `json:"entity"`
	Fields []Field         `json:"fields,omitempty"` // an update's, sorted by path
	Object json.RawMessage `json:"object,omitempty"` // a created entity (flattened), redacted
	key    string          // the entity's identity: it may derive from a secret
}

// Diff is what changed from one configuration to another.
type Diff struct {
	Changes []Change `json:"changes"` // by entity type (see order), then name
}

// Counts returns how many entities d creates, updates and deletes.
func (d *Diff) Counts() (created, updated, deleted int) {
	for _, c := range d.Changes {
		switch c.Action {
		case Create:
			created++
		case Update:
			updated++
		case Delete:
			deleted++
		}
	}
	return created, updated, deleted
}

// Configs compares two configurations in their JSON form entity by entity.
func Configs(from, to []byte) (*Diff, error) {
	a, err := flatten(from)
	if err != nil {
		return nil, fmt.Errorf("configdiff: the first configuration: %w", err)
	}
	b, err := flatten(to)
	if err != nil {
		return nil, fmt.Errorf("configdiff: the second configuration: %w", err)
	}
	return compare(a, b)
}

// Count returns how many entities of each type raw (JSON config.Check
// accepted) holds, as Configs counts them, in one pass without decoding it.
func Count(raw []byte) map[string]int {
	type frame struct {
		obj bool
		typ string // an object's kongraph type ("" none, root), a list's entities'
	}
	const root = "\x00root"
	out := map[string]int{}
	var stack []frame
	var key []byte
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			f := frame{obj: true}
			if n := len(stack); n == 0 {
				f.typ = root
			} else if top := stack[n-1]; !top.obj && top.typ != "" {
				f.typ = top.typ
				out[strings.TrimSuffix(top.typ, "s")]++
			}
			stack = append(stack, f)
		case '[':
			f := frame{}
			if n := len(stack); n > 0 && stack[n-1].obj && key != nil {
				switch parent := stack[n-1].typ; {
				case parent == root:
					f.typ = kongraph.CollectionType(string(key))
				case parent != "" && slices.Contains(kongraph.NestedKeys(parent), string(key)):
					f.typ = kongraph.ChildType(parent, string(key))
				}
			}
			key = nil
			stack = append(stack, f)
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key = nil
		case '"':
			end := stringEnd(raw, i+1)
			// A string in an object followed by ':' is a key.
			if n := len(stack); n > 0 && stack[n-1].obj {
				if rest := bytes.TrimLeft(raw[min(end+1, len(raw)):], " \t\n\r"); len(rest) > 0 && rest[0] == ':' {
					key = raw[i+1 : end]
				}
			}
			i = end
		}
	}
	return out
}

// stringEnd is the index of the quote ending the string from from (or len(raw)).
func stringEnd(raw []byte, from int) int {
	for {
		q := bytes.IndexByte(raw[from:], '"')
		if q < 0 {
			return len(raw)
		}
		end := from + q
		bs := 0
		for k := end - 1; k >= from && raw[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return end
		}
		from = end + 1
	}
}

func compare(a, b *set) (*Diff, error) {
	d := &Diff{}
	for _, e := range a.list {
		n, ok := b.byKey[e.key]
		if !ok {
			d.Changes = append(d.Changes, Change{Action: Delete, Entity: e.show(), key: e.key})
			continue
		}
		if e.sameAs(n) {
			continue
		}
		var paths [][]string
		diffValues(nil, e.own(), n.own(), &paths)
		fields, err := changedFields(e, n, paths)
		if err != nil {
			return nil, err
		}
		d.Changes = append(d.Changes, Change{Action: Update, Entity: n.show(), Fields: fields, key: e.key})
	}
	for _, n := range b.list {
		if _, ok := a.byKey[n.key]; ok {
			continue
		}
		obj, err := marshal(redact.Entity(n.typ, n.own()))
		if err != nil {
			return nil, fmt.Errorf("configdiff: %s: %w", n.show(), err)
		}
		d.Changes = append(d.Changes, Change{Action: Create, Entity: n.show(), Object: obj, key: n.key})
	}
	slices.SortStableFunc(d.Changes, func(x, y Change) int {
		return cmp.Or(cmp.Compare(rank(x.Entity.Type), rank(y.Entity.Type)), strings.Compare(x.Entity.String(), y.Entity.String()), strings.Compare(x.key, y.key))
	})
	return d, nil
}

// changedFields reads the values at paths in both versions, redacted.
func changedFields(old, cur *entity, paths [][]string) ([]Field, error) {
	ro, rn := redact.Entity(old.typ, old.own()), redact.Entity(cur.typ, cur.own())
	slices.SortFunc(paths, slices.Compare)
	out := make([]Field, 0, len(paths))
	for _, p := range paths {
		f := Field{Path: p}
		var err error
		if f.Old, err = valueAt(ro, p); err != nil {
			return nil, err
		}
		if f.New, err = valueAt(rn, p); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func valueAt(obj map[string]any, path []string) (json.RawMessage, error) {
	var v any = obj
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil
		}
		if v, ok = m[k]; !ok {
			return nil, nil
		}
	}
	b, err := marshal(v)
	if err != nil {
		return nil, fmt.Errorf("configdiff: %s: %w", strings.Join(path, "."), err)
	}
	return b, nil
}

// marshal is json.Marshal without HTML escaping, so that "<redacted>" reads as it is.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// diffValues appends the path of each difference (objects key by key, else whole).
func diffValues(path []string, a, b any, out *[][]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		if !equal(a, b) {
			*out = append(*out, append([]string(nil), path...))
		}
		return
	}
	for k, va := range ma {
		vb, ok := mb[k]
		if !ok {
			*out = append(*out, append(append([]string(nil), path...), k))
			continue
		}
		diffValues(append(path, k), va, vb, out)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			*out = append(*out, append(append([]string(nil), path...), k))
		}
	}
}

// equal is reflect.DeepEqual for decoded JSON, without its allocation per call.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	}
	return a == b // strings, json.Number, bools, nil
}

// order is the order of entity types in a diff: what an entity refers to comes before it.
var order = []string{"certificate", "ca_certificate", "sni", "key_set", "key", "vault",
	"service", "route", "upstream", "target", "consumer_group", "consumer",
	"keyauth_credential", "basicauth_credential", "hmacauth_credential", "jwt_secret",
	"oauth2_credential", "mtls_auth_credential", "acl", "consumer_group_consumer",
	"plugin", "filter_chain", "degraphql_route"}

func rank(typ string) int {
	if i := slices.Index(order, typ); i >= 0 {
		return i
	}
	return len(order)
}

// entity is one flattened entity of a configuration.
type entity struct {
	typ, kt     string         // Kong's entity type, kongraph's (plural for credentials)
	key         string         // its identity within its configuration (index.key)
	obj         map[string]any // as decoded: own fields are compared in place
	nested      []string
	parentField string
	parentRef   map[string]any
	parent      *entity
	refs        map[string][]string // foreign keys as written: field -> values
}

// get is one of the entity's own fields.
func (e *entity) get(k string) (any, bool) {
	if e.parentRef != nil && k == e.parentField {
		return e.parentRef, true
	}
	if slices.Contains(e.nested, k) {
		return nil, false
	}
	v, ok := e.obj[k]
	return v, ok
}

func (e *entity) ownLen() int {
	n := len(e.obj) - len(e.nested)
	if e.parentRef != nil {
		n++
	}
	return n
}

// sameAs reports whether e and o have equal own fields.
func (e *entity) sameAs(o *entity) bool {
	if e.ownLen() != o.ownLen() {
		return false
	}
	for k, v := range e.obj {
		if slices.Contains(e.nested, k) || (e.parentRef != nil && k == e.parentField) {
			continue
		}
		w, ok := o.get(k)
		if !ok || !equal(v, w) {
			return false
		}
	}
	if e.parentRef != nil {
		w, ok := o.get(e.parentField)
		return ok && equal(e.parentRef, w)
	}
	return true
}

// own is the entity's own fields as the reconciler flattens it (parentRef as parentField).
func (e *entity) own() map[string]any {
	if len(e.nested) == 0 && e.parentRef == nil {
		return e.obj
	}
	out := make(map[string]any, e.ownLen())
	for k, v := range e.obj {
		if !slices.Contains(e.nested, k) {
			out[k] = v
		}
	}
	if e.parentRef != nil {
		out[e.parentField] = e.parentRef
	}
	return out
}

func (e *entity) show() Entity {
	out := Entity{Type: e.typ, ID: str(e.obj["id"]), Name: e.name()}
	if tags, ok := e.obj["tags"].([]any); ok {
		for _, t := range tags {
			if s, ok := t.(string); ok && strings.HasPrefix(s, "k8s-") {
				out.Tags = append(out.Tags, s)
			}
		}
	}
	var parts []string
	if e.parent != nil {
		parts = append(parts, e.parent.label())
	}
	if e.typ != "service" && e.typ != "upstream" {
		for _, f := range kongraph.ForeignKeys(e.kt) {
			for _, v := range e.refs[f] {
				parts = append(parts, kongraph.ForeignKey(e.kt, f)+" "+v)
			}
		}
	}
	out.Parent = strings.Join(parts, ", ")
	return out
}

// label is "service echo" or "certificate 1b2c...".
func (e *entity) label() string {
	n := cmp.Or(e.name(), str(e.obj["id"]))
	if n == "" {
		return e.typ
	}
	return e.typ + " " + n
}

// name is the entity's endpoint key (kongraph's) when it is not a secret.
func (e *entity) name() string {
	switch e.typ {
	case "mtls_auth_credential":
		return str(e.obj["subject_name"])
	case "degraphql_route":
		return str(e.obj["uri"])
	case "keyauth_credential", "certificate", "ca_certificate":
		return ""
	}
	return kongraph.Identify(e.kt, e.obj).Name
}

// set is the flattened entities of one configuration.
type set struct {
	list  []*entity
	byKey map[string]*entity
}

// flatten lists a configuration's entities, nested ones beside their parents,
// each with its identity (index.key; a duplicate, which Kong refuses, by order).
func flatten(raw []byte) (*set, error) {
	root, err := kongraph.Decode(raw)
	if err != nil {
		return nil, err
	}
	s := &set{byKey: map[string]*entity{}}
	kongraph.Walk(root, func(kt string, obj map[string]any, parent *entity, parentField string) *entity {
		// Kong's entity types are kongraph's, singular.
		e := &entity{typ: strings.TrimSuffix(kt, "s"), kt: kt, parent: parent, obj: obj}
		for _, k := range kongraph.NestedKeys(kt) {
			if _, ok := obj[k]; ok {
				e.nested = append(e.nested, k)
			}
		}
		if parent != nil && parentField != "" && kt != "consumer_group_consumer" {
			if _, ok := obj[parentField]; !ok {
				e.parentField, e.parentRef = parentField, parent.ref()
			}
		}
		var parentKT string
		if parent != nil {
			parentKT = parent.kt
		}
		e.refs = kongraph.Refs(kt, obj, parentKT, parentField)
		s.list = append(s.list, e)
		return e
	})
	idx := newIndex(s.list)
	seen := map[string]int{}
	for _, e := range s.list {
		base := idx.key(e)
		e.key = base
		if n := seen[base]; n > 0 {
			e.key = fmt.Sprintf("%s#%d", base, n)
		}
		seen[base]++
		s.byKey[e.key] = e
	}
	return s, nil
}

// ref is how a nested entity names its parent: {"id": ...}, else its name.
func (e *entity) ref() map[string]any {
	if id := str(e.obj["id"]); id != "" {
		return map[string]any{"id": id}
	}
	if e.typ == "consumer" {
		if u := str(e.obj["username"]); u != "" {
			return map[string]any{"username": u}
		}
		return map[string]any{"custom_id": str(e.obj["custom_id"])}
	}
	return map[string]any{"name": str(e.obj["name"])}
}

// index finds an entity by its type and its id or endpoint key.
type index map[typed]*entity

type typed struct{ typ, value string }

func newIndex(list []*entity) index {
	idx := make(index, len(list))
	for _, e := range list {
		for _, f := range []string{"id", "name", "username", "custom_id", "target"} {
			if v := str(e.obj[f]); v != "" {
				if _, dup := idx[typed{e.typ, v}]; !dup {
					idx[typed{e.typ, v}] = e
				}
			}
		}
	}
	return idx
}

// resolve is the identity of what typ ref names: the entity's, or the reference as written.
func (idx index) resolve(typ, ref string) string {
	if e := idx[typed{typ, ref}]; e != nil {
		return idx.key(e)
	}
	return typ + "?" + ref
}

// scope is the identity of what field names: the parent, else the reference.
func (idx index) scope(e *entity, typ, field string) string {
	if e.parent != nil && e.parent.typ == typ {
		return idx.key(e.parent)
	}
	var out []string
	for _, v := range e.refs[field] {
		out = append(out, idx.resolve(typ, v))
	}
	return strings.Join(out, ",")
}

// key is e's identity as Kong's reconciler finds it: its id, else its endpoint
// key within its scope (plugins, targets, ACLs, ...), a secret as a digest.
func (idx index) key(e *entity) string {
	if id := str(e.obj["id"]); id != "" {
		return e.typ + ":id:" + id
	}
	o := e.obj
	var k string
	switch e.typ {
	case "consumer":
		if u := str(o["username"]); u != "" {
			k = "username:" + u
		} else {
			k = "custom_id:" + str(o["custom_id"])
		}
	case "plugin":
		k = str(o["name"])
		for _, f := range []string{"service", "route", "consumer", "consumer_group"} {
			k += "|" + f + "=" + idx.scope(e, f, f)
		}
	case "target":
		k = idx.scope(e, "upstream", "upstream") + "|" + str(o["target"])
	case "certificate":
		k = digest(str(o["cert"]), str(o["key"]))
	case "ca_certificate":
		k = digest(str(o["cert"]))
	case "keyauth_credential":
		k = digest(str(o["key"]))
	case "jwt_secret":
		k = str(o["key"])
	case "basicauth_credential", "hmacauth_credential":
		k = str(o["username"])
	case "oauth2_credential":
		k = str(o["client_id"])
	case "acl":
		k = idx.scope(e, "consumer", "consumer") + "|" + str(o["group"])
	case "mtls_auth_credential":
		k = idx.scope(e, "consumer", "consumer") + "|" + str(o["subject_name"])
	case "consumer_group_consumer":
		k = idx.scope(e, "consumer_group", "consumer_group") + "|" + idx.scope(e, "consumer", "consumer")
	case "degraphql_route":
		k = idx.scope(e, "service", "service") + "|" + str(o["uri"]) + "|" + str(o["query"])
	case "vault":
		k = str(o["prefix"])
	case "filter_chain":
		k = str(o["name"]) + "|" + idx.scope(e, "service", "service") + "|" + idx.scope(e, "route", "route")
	default:
		k = str(o["name"])
	}
	return e.typ + ":" + k
}

// digest stands for a value that may be a secret (a key-auth key, a private key) in an identity.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
