package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/confighub/confighub/config"
)

// Placeholder replaces every redacted value.
const Placeholder = "<redacted>"

// field is a path of keys inside one entity; most are one key long.
type field []string

// byCollection lists the secret fields of each entity collection.
var byCollection = map[string][]field{
	"keyauth_credentials":   {{"key"}},
	"basicauth_credentials": {{"password"}},
	"hmacauth_credentials":  {{"secret"}},
	"jwt_secrets":           {{"secret"}},
	"oauth2_credentials":    {{"client_secret"}},
	"certificates":          {{"key"}, {"key_alt"}},
	"keys":                  {{"jwk"}, {"pem", "private_key"}},
	// A service or upstream may carry its client certificate inline.
	"services":  {{"client_certificate", "key"}, {"client_certificate", "key_alt"}},
	"upstreams": {{"client_certificate", "key"}, {"client_certificate", "key_alt"}},
}

// uniqueValue finds the value Kong quotes in a uniqueness error of a secret field.
var uniqueValue = regexp.MustCompile(`('(?:keyauth_credentials|basicauth_credentials|hmacauth_credentials|jwt_secrets|oauth2_credentials|certificates|keys)' entity with (?:key|password|secret|client_secret|key_alt|jwk) set to ')(.*?)(' already declared)`)

// Message removes the secret values Kong quotes in its error messages.
func Message(s string) string {
	if strings.Contains(s, " set to '") {
		s = uniqueValue.ReplaceAllString(s, "${1}"+Placeholder+"${3}")
	}
	if strings.Contains(s, "violation") {
		// A Kong with a database: UNIQUE violation detected on '{key="..."}'.
		s = dbUniqueValue.ReplaceAllString(s, "${1}"+Placeholder+"${3}")
	}
	return s
}

// dbUniqueValue is a secret field a database-backed Kong quotes in a unique violation.
var dbUniqueValue = regexp.MustCompile(`((?:^|[{,\s])(?:key|password|secret|client_secret|key_alt)=\\?")(.*?)(\\?")`)

// needles: a configuration with none of them is returned unparsed.
var needles = [][]byte{[]byte("key"), []byte("password"), []byte("secret"), []byte("jwk")}

// Config redacts raw, a configuration or an Admin API error body in format f
// (FormatUnknown: detected), and says whether anything was redacted; JSON
// that is not an object or array is returned as is. A server.Redactor.
func Config(raw []byte, f config.Format) ([]byte, bool, error) {
	if f == config.FormatUnknown {
		f = config.Detect(raw)
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 {
		return raw, false, nil
	}
	if f == config.FormatJSON && trimmed[0] != '{' && trimmed[0] != '[' {
		return raw, false, nil
	}
	if !slices.ContainsFunc(needles, func(n []byte) bool { return bytes.Contains(raw, n) }) {
		return raw, false, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, false, fmt.Errorf("redact: parse the configuration: %w", err)
	}
	if len(doc.Content) == 0 {
		return raw, false, nil
	}
	if !walk(doc.Content[0]) {
		return raw, false, nil
	}
	var out bytes.Buffer
	if f == config.FormatJSON {
		if err := writeJSON(&out, doc.Content[0]); err != nil {
			return nil, false, fmt.Errorf("redact: write JSON: %w", err)
		}
		if bytes.Contains(bytes.TrimSpace(raw), []byte("\n")) {
			var ind bytes.Buffer
			if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
				return nil, false, fmt.Errorf("redact: indent JSON: %w", err)
			}
			ind.WriteByte('\n')
			return ind.Bytes(), true, nil
		}
		return out.Bytes(), true, nil
	}
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	err := enc.Encode(&doc)
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		return nil, false, fmt.Errorf("redact: write YAML: %w", err)
	}
	return out.Bytes(), true, nil
}

// walk redacts every secret under n and reports whether it changed one.
func walk(n *yaml.Node) bool {
	changed := false
	switch n.Kind {
	case yaml.MappingNode:
		var entityType string
		var entity *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Value == "entity_type" && v.Kind == yaml.ScalarNode:
				entityType = v.Value
			case k.Value == "entity" && v.Kind == yaml.MappingNode:
				entity = v
			}
			if fields, ok := byCollection[k.Value]; ok && v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					changed = e.Kind == yaml.MappingNode && redactEntity(e, fields) || changed
				}
			}
		}
		// A flattened error's entity_type is its collection's name less the "s".
		if fields, ok := byCollection[entityType+"s"]; ok && entity != nil && redactEntity(entity, fields) {
			changed = true
		}
		for i := 1; i < len(n.Content); i += 2 {
			changed = walk(n.Content[i]) || changed
		}
	case yaml.ScalarNode:
		if m := Message(n.Value); m != n.Value {
			n.Value = m
			changed = true
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			changed = walk(c) || changed
		}
	}
	return changed
}

func redactEntity(e *yaml.Node, fields []field) bool {
	changed := false
	for _, f := range fields {
		if v := lookup(e, f); v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && v.Value != "" && v.Value != Placeholder {
			v.Value, v.Tag, v.Style = Placeholder, "!!str", 0
			changed = true
		}
	}
	return changed
}

func lookup(n *yaml.Node, path field) *yaml.Node {
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// writeJSON writes a node tree parsed from JSON back as compact JSON, in key order.
func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, n.Content[i].Value)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			writeString(b, n.Value)
		case "!!null":
			b.WriteString("null")
		case "!!int", "!!float", "!!bool":
			// Parsed from JSON: the original text is valid JSON.
			if !json.Valid([]byte(n.Value)) {
				return fmt.Errorf("line %d: %q is not a JSON value", n.Line, n.Value)
			}
			b.WriteString(n.Value)
		default:
			writeString(b, n.Value)
		}
	case yaml.AliasNode:
		return writeJSON(b, n.Alias)
	default:
		return fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.WriteString(strings.TrimSuffix(sb.String(), "\n"))
}

// NameIsSecret reports whether an entity's name is a secret (a key-auth credential's key).
func NameIsSecret(entityType string) bool {
	return strings.TrimSuffix(entityType, "s") == "keyauth_credential"
}

// Entity returns a redacted copy of obj, a decoded entity of type typ
// (numbers as json.Number), or nil when Config could not read it.
func Entity(typ string, obj map[string]any) map[string]any {
	coll := typ + "s"
	raw, err := json.Marshal(map[string][]map[string]any{coll: {obj}})
	if err != nil {
		return nil
	}
	out, changed, err := Config(raw, config.FormatJSON)
	switch {
	case err != nil:
		return nil
	case !changed:
		return obj
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var doc map[string][]map[string]any
	if dec.Decode(&doc) != nil || len(doc[coll]) != 1 {
		return nil
	}
	return doc[coll][0]
}
