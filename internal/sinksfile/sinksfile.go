package sinksfile

import (
	"encoding/json"
	"fmt"
	"os"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Load reads and checks a sinks file. Every error names the file and, where
// it can, the entry.
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
func Parse(b []byte) ([]*confighubv1.Sink, error) {
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var items []json.RawMessage
	if string(js) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(js, &items); err != nil {
		return nil, fmt.Errorf("must be a list of sinks: %w", err)
	}
	v, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	out := make([]*confighubv1.Sink, 0, len(items))
	md := (&confighubv1.Sink{}).ProtoReflect().Descriptor()
	for i, it := range items {
		it, err := normalizeDurations(it, md)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		s := &confighubv1.Sink{}
		if err := protojson.Unmarshal(it, s); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if err := v.Validate(s); err != nil {
			return nil, fmt.Errorf("entry %d (%q): %w", i, s.GetName(), err)
		}
		out = append(out, s)
	}
	return out, nil
}
