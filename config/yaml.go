package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// errSeveralDocuments: Kong's parser and the hub's would disagree on which counts.
var errSeveralDocuments = errors.New("the YAML stream holds more than one document (a second one follows '---'): push one configuration per stream")

// yamlToJSON is sigs.k8s.io/yaml.YAMLToJSON, except that a key twice in a
// mapping (compared as JSON keys) and a second document are errors.
func yamlToJSON(raw []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var doc yamlDoc
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return []byte("null"), nil // only comments or nothing
		}
		if strings.Contains(err.Error(), "exceeded max depth") {
			return nil, fmt.Errorf("the nesting is too deep: mappings and sequences may nest at most %d levels (%v)", maxDepth, err)
		}
		return nil, err
	}
	// Only after a clean document: the decoder panics when asked for more after an error.
	var next any
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, errSeveralDocuments
	}
	v, err := jsonable(doc.v, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// yamlDoc decodes a document's top level as a yaml.MapSlice, or as whatever else it is.
type yamlDoc struct{ v any }

func (d *yamlDoc) UnmarshalYAML(unmarshal func(any) error) error {
	var ms yaml.MapSlice
	if err := unmarshal(&ms); err == nil {
		d.v = ms
		return nil
	}
	return unmarshal(&d.v)
}

// jsonable converts a decoded YAML value at path to values encoding/json
// writes, as sigs.k8s.io/yaml does, and refuses a mapping with a key twice.
func jsonable(v any, path []string) (any, error) {
	at := func(part string) []string { return append(path[:len(path):len(path)], part) }
	switch t := v.(type) {
	case yaml.MapSlice:
		m := make(map[string]any, len(t))
		for _, it := range t {
			k, err := yamlKey(it.Key)
			if err != nil {
				return nil, fmt.Errorf("%v (in %s)", err, joinPath(path))
			}
			p := at(pathKey(k))
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("duplicate key %s: a mapping may hold each key once", joinPath(p))
			}
			if m[k], err = jsonable(it.Value, p); err != nil {
				return nil, err
			}
		}
		return m, nil
	case map[any]any: // a non-mapping top level never has these
		m := make(map[string]any, len(t))
		for k, e := range t {
			ks, err := yamlKey(k)
			if err != nil {
				return nil, err
			}
			if m[ks], err = jsonable(e, at(pathKey(ks))); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			var err error
			if out[i], err = jsonable(e, at("["+strconv.Itoa(i)+"]")); err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		return v, nil
	}
}

// yamlKey writes a mapping key as the JSON key sigs.k8s.io/yaml makes of it.
func yamlKey(k any) (string, error) {
	switch t := k.(type) {
	case string:
		return t, nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case uint64:
		return strconv.FormatUint(t, 10), nil
	case float64:
		switch s := strconv.FormatFloat(t, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(t), nil
	default:
		return "", fmt.Errorf("unsupported mapping key of type %s", reflect.TypeOf(k))
	}
}

// yamlScalarText is a YAML document's _format_version as written (3.0 where
// the JSON form holds 3), else json; only a refusal parses the document again.
func yamlScalarText(raw []byte, json string) string {
	var top struct {
		FV string `yaml:"_format_version"`
	}
	if err := yaml.Unmarshal(raw, &top); err != nil || top.FV == "" {
		return json
	}
	return top.FV
}
