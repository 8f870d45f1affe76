package sinksfile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
)

const durationName = "google.protobuf.Duration"

// normalizeDurations rewrites Go duration strings ("1h", "1m30s", "250ms")
// in Duration fields to protojson's seconds form ("3600s"), so a sinks file
// can be written the way operators write durations. Values protojson
// accepts already are left alone.
func normalizeDurations(raw json.RawMessage, md protoreflect.MessageDescriptor) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if err := walk(v, md, ""); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func walk(v any, md protoreflect.MessageDescriptor, path string) error {
	obj, ok := v.(map[string]any)
	if !ok || md.FullName() == "google.protobuf.Struct" {
		return nil
	}
	fields := md.Fields()
	for key, val := range obj {
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(key))
		}
		if fd == nil || fd.Message() == nil {
			continue // unknown keys are protojson's to report
		}
		p := path + key
		switch {
		case fd.Message().FullName() == durationName && !fd.IsList():
			s, ok := val.(string)
			if !ok {
				continue
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("%s: %q is not a duration (e.g. 30s, 1m30s, 250ms): %v", p, s, err)
			}
			obj[key] = strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
		case fd.IsList():
			if items, ok := val.([]any); ok {
				for i, it := range items {
					if err := walk(it, fd.Message(), fmt.Sprintf("%s[%d].", p, i)); err != nil {
						return err
					}
				}
			}
		case fd.IsMap():
			// No map of messages in Sink carries a duration.
		default:
			if err := walk(val, fd.Message(), p+"."); err != nil {
				return err
			}
		}
	}
	return nil
}
