package kongraph

// Entities lists the configuration's entities in walk order.
func (d *Doc) Entities() []Entity {
	out := make([]Entity, len(d.nodes))
	for i, n := range d.nodes {
		out[i] = n.Entity
	}
	return out
}
