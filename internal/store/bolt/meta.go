package bolt

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// marshalMeta is json.Marshal(m), byte for byte
// (TestMarshalMetaIsJSONMarshal), without reflection: a commit encodes
// its meta on the ack path, where encoding/json cost about 2 us and three
// allocations per push.
func marshalMeta(m streamMeta) ([]byte, error) {
	_, off := m.AcceptTime.Zone()
	if y := m.AcceptTime.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		return json.Marshal(m) // not RFC 3339: refused there, with its error
	}
	n := 160 + len(m.Stream) + len(m.Hash) + len(m.Format) + len(m.Blob)
	for k, v := range m.Labels {
		n += len(k) + len(v) + 6
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	if m.Stream != "" {
		b = appendJSONString(append(b, `"stream":`...), m.Stream)
		b = append(b, ',')
	}
	b = strconv.AppendUint(append(b, `"generation":`...), m.Generation, 10)
	b = appendJSONString(append(b, `,"hash":`...), m.Hash)
	b = appendJSONString(append(b, `,"format":`...), m.Format)
	b = strconv.AppendInt(append(b, `,"size":`...), int64(m.Size), 10)
	if len(m.Labels) > 0 {
		b = append(b, `,"labels":{`...)
		keys := make([]string, 0, len(m.Labels))
		for k := range m.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = appendJSONString(append(b, ':'), m.Labels[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"accept_time":"`...)
	b = m.AcceptTime.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if m.Blob != "" {
		b = appendJSONString(append(b, `,"blob":`...), m.Blob)
	}
	return append(b, '}'), nil
}

// appendJSONString appends s quoted as encoding/json quotes a string
// (HTML characters escaped, invalid UTF-8 as U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
