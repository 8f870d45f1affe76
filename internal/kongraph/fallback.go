package kongraph

import (
	"encoding/json"
	"fmt"
)

// Excluded is one entity a fallback leaves out (or holds at its previous version).
type Excluded struct {
	Entity
	Rejected     bool   // the gateway named it
	DependsOn    string // else: the excluded entity it depends on
	PreviousKept bool   // the fallback holds its previous version
}

// Closure returns the entities excluded with the rejected ones (indexes
// in d): each maps to the index of the excluded entity it depends on (-1
// for a rejected one). An entity nested in an excluded one, or whose
// foreign key names one, is excluded, transitively.
func (d *Doc) Closure(rejected []int) map[int]int {
	users := make(map[int][]int, len(d.nodes))
	for _, n := range d.nodes {
		for _, dep := range d.deps(n) {
			users[dep.Index] = append(users[dep.Index], n.Index)
		}
	}
	out := map[int]int{}
	queue := make([]int, 0, len(rejected))
	for _, r := range rejected {
		if r < 0 || r >= len(d.nodes) {
			continue
		}
		if _, ok := out[r]; !ok {
			out[r] = -1
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, u := range users[x] {
			if _, ok := out[u]; !ok {
				out[u] = x
				queue = append(queue, u)
			}
		}
	}
	return out
}

// Fallback is the configuration (JSON) without the rejected entities (indexes
// in d) and their Closure, but with prev's version (flat) of an excluded one
// whose references resolve, and what resolves again then. Nothing in it names
// what it lacks; excluded lists, in walk order, what is out or held back.
func (d *Doc) Fallback(rejected []int, prev *Doc) (body []byte, excluded []Excluded, err error) {
	closure := d.Closure(rejected)
	in := present{}
	for _, n := range d.nodes {
		if _, out := closure[n.Index]; !out {
			in.add(n.Entity)
		}
	}
	restored := map[int]bool{} // the new version is back (inserted flat)
	kept := map[int]*node{}    // the previous version is
	for changed := true; changed; {
		changed = false
		for _, n := range d.nodes {
			dep, out := closure[n.Index]
			if !out || restored[n.Index] || kept[n.Index] != nil {
				continue
			}
			if dep >= 0 && in.resolves(n) {
				restored[n.Index] = true
				in.add(n.Entity)
				changed = true
				continue
			}
			if prev == nil {
				continue
			}
			if p := prev.versionOf(n.Entity); p != nil && in.resolves(p) && !in.taken(p.Entity) {
				kept[n.Index] = p
				in.add(p.Entity)
				changed = true
			}
		}
	}

	root, err := Decode(d.raw)
	if err != nil {
		return nil, nil, fmt.Errorf("kongraph: %w", err)
	}
	fresh := make([]*node, 0, len(d.nodes))
	walk(root, func(n *node) { fresh = append(fresh, n) })
	if len(fresh) != len(d.nodes) {
		return nil, nil, fmt.Errorf("kongraph: the configuration changed while building its fallback")
	}
	var add []*node
	for i, n := range fresh {
		if _, out := closure[i]; !out {
			continue
		}
		n.obj[dropMark] = true
		switch {
		case restored[i]:
			add = append(add, n)
		case kept[i] != nil:
			add = append(add, kept[i])
			excluded = append(excluded, excludedOf(d, closure, i, true))
		default:
			excluded = append(excluded, excludedOf(d, closure, i, false))
		}
	}
	prune(root)
	for _, n := range add {
		key := collectionOf(n.Type)
		list, _ := root[key].([]any)
		root[key] = append(list, flatten(n))
	}
	body, err = json.Marshal(root)
	if err != nil {
		return nil, nil, fmt.Errorf("kongraph: %w", err)
	}
	return body, excluded, nil
}

func excludedOf(d *Doc, closure map[int]int, i int, keptPrev bool) Excluded {
	x := Excluded{Entity: d.nodes[i].Entity, PreviousKept: keptPrev}
	if dep := closure[i]; dep >= 0 {
		x.DependsOn = d.nodes[dep].Key()
	} else {
		x.Rejected = true
	}
	return x
}

// dropMark marks an object to be pruned (no decoded key holds a NUL).
const dropMark = "\x00kongraph-drop"

// prune removes the marked objects from every entity list.
func prune(root map[string]any) {
	for key, v := range root {
		if typ, ok := collections[key]; ok {
			root[key] = pruneList(typ, v)
		}
	}
}

func pruneList(typ string, v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := list[:0]
	for _, x := range list {
		if obj, ok := x.(map[string]any); ok {
			if obj[dropMark] != nil {
				continue
			}
			for key := range nested[typ] {
				if c, ok := obj[key]; ok {
					obj[key] = pruneList(ChildType(typ, key), c)
				}
			}
		}
		out = append(out, x)
	}
	return out
}

// flatten is n's object for a top-level list: no nested ones, its parent a reference.
func flatten(n *node) map[string]any {
	if n.Type == "consumer_group_consumer" && n.parent != nil {
		// A nested membership is the other side's reference.
		_, p := ref(n.parent.Entity)
		out := map[string]any{n.parentField: p}
		for other, vals := range Refs(n.Type, n.obj, n.parent.Type, n.parentField) {
			if len(vals) > 0 {
				out[other] = vals[0]
			}
		}
		return out
	}
	out := make(map[string]any, len(n.obj)+1)
	for k, v := range n.obj {
		if _, isKid := nested[n.Type][k]; !isKid && k != dropMark {
			out[k] = v
		}
	}
	if n.parent != nil {
		field, v := ref(n.parent.Entity)
		out[n.parentField] = map[string]any{field: v}
	}
	return out
}

// ref is how a foreign key names e: its id, else its name (a consumer's username).
func ref(e Entity) (field, value string) {
	switch {
	case e.ID != "":
		return "id", e.ID
	case e.Type == "consumer":
		return "username", e.Name
	}
	return "name", e.Name
}

// collectionOf is the top-level key of typ's entities.
func collectionOf(typ string) string {
	if _, ok := collections[typ]; ok {
		return typ
	}
	return typ + "s"
}

// present holds the types and ids or names of a fallback's entities.
type present map[fk]bool

func (p present) add(e Entity) {
	for _, v := range []string{e.ID, e.Name} {
		if v != "" {
			p[fk{e.Type, v}] = true
		}
	}
}

// taken: another entity of the result has e's id or name.
func (p present) taken(e Entity) bool {
	return (e.ID != "" && p[fk{e.Type, e.ID}]) || (e.Name != "" && p[fk{e.Type, e.Name}])
}

// resolves: n's parent and foreign keys name entities of the result.
func (p present) resolves(n *node) bool {
	if n.parent != nil {
		if _, v := ref(n.parent.Entity); !p[fk{n.parent.Type, v}] {
			return false
		}
	}
	for _, r := range foreignKeys(n) {
		if !p[r] {
			return false
		}
	}
	return true
}

// versionOf is d's entity with e's type and id (else name).
func (d *Doc) versionOf(e Entity) *node {
	if e.ID != "" {
		return d.byID[fk{e.Type, e.ID}]
	}
	if e.Name != "" {
		return d.byKey[fk{e.Type, e.Name}]
	}
	return nil
}
