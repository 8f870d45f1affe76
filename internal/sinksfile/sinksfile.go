package sinksfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"buf.build/go/protovalidate"
	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Error is a problem at a line and column (1-based) of the user's file, in
// an entry (index, -1 for none; name), at a field path as the user spelled it.
type Error struct {
	Line, Column, Entry int
	Name, Path, Msg     string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	if e.Entry >= 0 {
		fmt.Fprintf(&b, "entry %d", e.Entry)
		if e.Name != "" {
			fmt.Fprintf(&b, " (%q)", e.Name)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and checks a sinks file; every error names the file.
func Load(path string) ([]*confighubv1.Sink, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sinks file %s: %w", path, err)
	}
	sinks, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("sinks file %s: %w", path, err)
	}
	return sinks, nil
}

// Parse reads a YAML or JSON list of sinks.
func Parse(b []byte) ([]*confighubv1.Sink, error) { return parse(b, false) }

// ParseOneOrMany is Parse that also takes a single sink (a mapping), as `confighubctl sinks put -f` does.
func ParseOneOrMany(b []byte) ([]*confighubv1.Sink, error) { return parse(b, true) }

func parse(b []byte, one bool) ([]*confighubv1.Sink, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // empty file
	}
	root := doc.Content[0]
	items := root.Content
	switch {
	case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
		return nil, nil
	case root.Kind == yaml.MappingNode && one:
		items = []*yaml.Node{root}
	case root.Kind != yaml.SequenceNode:
		return nil, &Error{Line: root.Line, Column: root.Column, Entry: -1,
			Msg: "the file must be a list of sinks (each one starts with \"- \"), found " + kindName(root)}
	}
	md := (&confighubv1.Sink{}).ProtoReflect().Descriptor()
	out := make([]*confighubv1.Sink, 0, len(items))
	for i, it := range items {
		name := entryName(it)
		at := func(e *Error) *Error { e.Entry, e.Name = i, name; return e }
		val, perr := convert(it, md, "")
		if perr != nil {
			return nil, at(perr)
		}
		js, err := json.Marshal(val)
		if err != nil {
			return nil, at(&Error{Line: it.Line, Column: it.Column, Msg: err.Error()})
		}
		s := &confighubv1.Sink{}
		if err := protojson.Unmarshal(js, s); err != nil {
			// What convert does not check; protojson's position is not the file's.
			return nil, at(&Error{Line: it.Line, Column: it.Column, Msg: jsonPos.ReplaceAllString(err.Error(), "")})
		}
		if err := protovalidate.Validate(s); err != nil {
			return nil, at(violation(it, err))
		}
		out = append(out, s)
	}
	return out, nil
}

// jsonPos is protojson's "proto: (line 1:33): " prefix.
var jsonPos = regexp.MustCompile(`^proto:\s*(\(line \d+:\d+\):\s*)?`)

// violation places the first protovalidate violation at its field in the entry.
func violation(entry *yaml.Node, err error) *Error {
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return &Error{Line: entry.Line, Column: entry.Column, Msg: err.Error()}
	}
	p := ve.Violations[0].Proto
	path := protovalidate.FieldPathString(p.GetField())
	n, spelled := lookup(entry, path)
	msg := p.GetMessage()
	if len(ve.Violations) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(ve.Violations)-1)
	}
	return &Error{Line: n.Line, Column: n.Column, Path: spelled, Msg: msg}
}

// lookup finds the node of a protovalidate field path in the entry, as deep
// as it exists, and the path as the user spelled it.
func lookup(entry *yaml.Node, path string) (*yaml.Node, string) {
	n, spelled := entry, []string{}
	for _, part := range strings.Split(path, ".") {
		part, _, _ = strings.Cut(part, "[")
		next, key := child(n, part)
		if next == nil {
			spelled = append(spelled, part)
			break
		}
		n, spelled = next, append(spelled, key)
	}
	return n, strings.Join(spelled, ".")
}

// child is the value of a mapping's field by its proto or JSON (lowerCamel) name.
func child(m *yaml.Node, protoName string) (*yaml.Node, string) {
	if m.Kind != yaml.MappingNode {
		return nil, ""
	}
	camel := lowerCamel(protoName)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i].Value; k == protoName || k == camel {
			return m.Content[i+1], k
		}
	}
	return nil, ""
}

func lowerCamel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// entryName is the entry's name: field, if it is a plain string.
func entryName(it *yaml.Node) string {
	if n, _ := child(it, "name"); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}
