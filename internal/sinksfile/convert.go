package sinksfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const (
	durationName = "google.protobuf.Duration"
	structName   = "google.protobuf.Struct"
)

// convert checks node against md, field by field, and returns the value in
// protojson's JSON shape (Go durations as seconds); every error points at the
// node in the user's file, with path, the parent's, as the user spelled it.
func convert(node *yaml.Node, md protoreflect.MessageDescriptor, path string) (any, *Error) {
	node = deref(node)
	if isNull(node) {
		return nil, nil
	}
	if md.FullName() == structName {
		var v any
		if err := node.Decode(&v); err != nil {
			return nil, errAt(node, path, err.Error())
		}
		return v, nil
	}
	if node.Kind != yaml.MappingNode {
		return nil, errAt(node, path, fmt.Sprintf("must be a mapping of %s fields (%s), found %s", md.Name(), fieldNames(md), kindName(node)))
	}
	out := map[string]any{}
	fields := md.Fields()
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, val := node.Content[i], node.Content[i+1]
		fd := fields.ByJSONName(k.Value)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(k.Value))
		}
		p := join(path, k.Value)
		if fd == nil {
			return nil, errAt(k, p, fmt.Sprintf("unknown field %q; %s has: %s", k.Value, where(md, path), fieldNames(md)))
		}
		v, err := convertField(val, fd, p)
		if err != nil {
			return nil, err
		}
		if v != nil {
			out[k.Value] = v
		}
	}
	return out, nil
}

func convertField(node *yaml.Node, fd protoreflect.FieldDescriptor, path string) (any, *Error) {
	node = deref(node)
	if isNull(node) {
		return nil, nil
	}
	switch {
	case fd.IsList():
		if node.Kind != yaml.SequenceNode {
			return nil, errAt(node, path, "must be a list, found "+kindName(node))
		}
		out := make([]any, 0, len(node.Content))
		for i, it := range node.Content {
			v, err := convertValue(it, fd, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case fd.IsMap():
		if node.Kind != yaml.MappingNode {
			return nil, errAt(node, path, "must be a mapping, found "+kindName(node))
		}
		out := map[string]any{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k := node.Content[i]
			v, err := convertValue(node.Content[i+1], fd.MapValue(), path+"."+k.Value)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	}
	return convertValue(node, fd, path)
}

// convertValue converts one value of fd's kind (an element, for lists).
func convertValue(node *yaml.Node, fd protoreflect.FieldDescriptor, path string) (any, *Error) {
	node = deref(node)
	if isNull(node) {
		return nil, nil
	}
	if md := fd.Message(); md != nil {
		if md.FullName() == durationName {
			return duration(node, path)
		}
		return convert(node, md, path)
	}
	if node.Kind != yaml.ScalarNode {
		return nil, errAt(node, path, fmt.Sprintf("must be a %s, found %s", kindWord(fd), kindName(node)))
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return node.Value, nil // a number or word written unquoted is still the text written
	case protoreflect.BoolKind:
		if node.Tag != "!!bool" {
			return nil, errAt(node, path, fmt.Sprintf("%s is not true or false", node.Value))
		}
		b, _ := strconv.ParseBool(strings.ToLower(node.Value))
		return b, nil
	case protoreflect.EnumKind:
		ev := fd.Enum().Values()
		if ev.ByName(protoreflect.Name(node.Value)) != nil {
			return node.Value, nil
		}
		var names []string
		for i := range ev.Len() {
			names = append(names, string(ev.Get(i).Name()))
		}
		return nil, errAt(node, path, fmt.Sprintf("%q is not one of %s", node.Value, strings.Join(names, ", ")))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f, err := strconv.ParseFloat(node.Value, 64)
		if err != nil || (node.Tag != "!!int" && node.Tag != "!!float") {
			return nil, errAt(node, path, fmt.Sprintf("%s is not a number", node.Value))
		}
		return f, nil
	case protoreflect.BytesKind:
		return node.Value, nil // base64, as protojson reads it
	}
	// The integer kinds.
	if node.Tag != "!!int" {
		return nil, errAt(node, path, fmt.Sprintf("%s is not a whole number", node.Value))
	}
	n, err := strconv.ParseInt(node.Value, 0, 64)
	if err != nil {
		return nil, errAt(node, path, fmt.Sprintf("%s is not a whole number: %v", node.Value, err))
	}
	return n, nil
}

// duration reads a Go duration string; a bare number is refused, never guessed at.
func duration(node *yaml.Node, path string) (any, *Error) {
	if node.Kind != yaml.ScalarNode || node.Tag != "!!str" {
		return nil, errAt(node, path, fmt.Sprintf("%s is not a duration: durations are strings such as \"10s\", \"1m30s\" or \"250ms\"", display(node)))
	}
	d, err := time.ParseDuration(node.Value)
	if err != nil {
		return nil, errAt(node, path, fmt.Sprintf("%q is not a duration (durations are strings such as \"10s\", \"1m30s\" or \"250ms\")", node.Value))
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s", nil
}

func errAt(n *yaml.Node, path, msg string) *Error {
	return &Error{Line: n.Line, Column: n.Column, Path: path, Msg: msg}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// where names the mapping an unknown field was found in.
func where(md protoreflect.MessageDescriptor, path string) string {
	if path == "" {
		return "a sink"
	}
	return path + " (" + string(md.Name()) + ")"
}

// fieldNames lists md's fields by their proto names, sorted.
func fieldNames(md protoreflect.MessageDescriptor) string {
	var names []string
	for i := range md.Fields().Len() {
		names = append(names, string(md.Fields().Get(i).Name()))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return display(n)
	}
	return "nothing"
}

// display shows a scalar as written, with what YAML made of it.
func display(n *yaml.Node) string {
	switch {
	case n.Kind != yaml.ScalarNode:
		return kindName(n)
	case n.Tag == "!!int" || n.Tag == "!!float":
		return "the number " + n.Value
	case n.Tag == "!!bool":
		return "the boolean " + n.Value
	}
	return strconv.Quote(n.Value)
}

func kindWord(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "string"
	case protoreflect.BoolKind:
		return "boolean"
	case protoreflect.EnumKind:
		return "name"
	}
	return "number"
}
