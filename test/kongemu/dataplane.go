package kongemu

// This file is what the data plane emulator (test/kongemu/dataplane) takes
// from the Admin API emulator: a data plane feeds a reconfigure frame's
// config_table to the same declarative parser as POST /config
// (kong/clustering/config_helper.lua update, kong/db/declarative parse_table).

// CheckDeclarative checks one declarative configuration (JSON or YAML) as a
// Kong OSS node with the bundled plugins and extra does. c may be nil; a
// shared Cache checks a configuration once for every node that gets it.
func (c *Cache) CheckDeclarative(body []byte, extra ...string) Result {
	o := checkOptions{oss: true}
	if len(extra) > 0 {
		o.plugins = map[string]bool{}
		for _, p := range extra {
			o.plugins[p] = true
		}
	}
	res, _ := c.check(body, o)
	return res
}

// BundledPlugins are the plugin names a Kong OSS node has, sorted.
func BundledPlugins() []string { return sortedKeys(bundledPlugins) }

// Flattened is b as Kong's flatten_errors renders it (flattened_errors
// with the entity errors, fields with what they do not place): the shape
// of a data plane's error frame.
func (b *ErrorBody) Flattened() ErrorBody { return b.render(true) }
