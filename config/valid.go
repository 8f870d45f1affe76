package config

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays a configuration may
// have (encoding/json's limit; Kong's own configurations nest about 6 deep).
const MaxDepth = 10000

// linearKeys is how many keys of one object are compared one by one before
// the object's keys go into a map: Kong entities have a dozen keys or so.
const linearKeys = 16

// SyntaxError says why Scan rejected JSON bytes and where.
type SyntaxError struct {
	// Offset is the byte at which the input stopped making sense.
	Offset int
	// Kind says what was wrong.
	Kind SyntaxErrorKind
	// Path names the offending key (Kind DuplicateKey) or the value in
	// which the problem is (InvalidUTF8), e.g. services[3].routes[0].name.
	Path string
}

// SyntaxErrorKind is the closed set of reasons Scan rejects bytes.
type SyntaxErrorKind int

const (
	// Malformed: not JSON (RFC 8259).
	Malformed SyntaxErrorKind = iota
	// TooDeep: objects and arrays nest deeper than MaxDepth.
	TooDeep
	// DuplicateKey: an object has the same key twice (after unescaping).
	// Parsers disagree on which one wins (Kong keeps the last, gjson reads
	// the first), so the hub accepts neither.
	DuplicateKey
	// InvalidUTF8: a string holds bytes that are not UTF-8; Kong refuses
	// them.
	InvalidUTF8
)

func (e *SyntaxError) Error() string {
	switch e.Kind {
	case TooDeep:
		return fmt.Sprintf("the nesting is too deep at byte %d: objects and arrays may nest at most %d levels", e.Offset, MaxDepth)
	case DuplicateKey:
		return fmt.Sprintf("duplicate key %s (byte %d): an object may hold each key once", e.Path, e.Offset)
	case InvalidUTF8:
		return fmt.Sprintf("invalid UTF-8 in a string at byte %d (in %s)", e.Offset, e.Path)
	default:
		return fmt.Sprintf("syntax error near byte %d", e.Offset)
	}
}

// Valid reports whether Scan accepts b.
func Valid(b []byte) bool { return Scan(b) == nil }

// frame is one open object or array.
type frame struct {
	obj bool
	// keys is where this object's keys start in scanner.keys.
	keys int
	// index counts an array's elements (for error paths).
	index int
	// big holds the keys once the object has more than linearKeys.
	big map[string]struct{}
}

type scanner struct {
	b      []byte
	frames []frame
	// keys are the keys of every open object, outermost first, unescaped.
	keys [][]byte
}

// Scan checks that b is exactly one JSON value (RFC 8259) with optional
// surrounding whitespace, strictly: every string is UTF-8, no object has a
// key twice (compared after unescaping, at any depth), nesting is at most
// MaxDepth. It accepts a subset of what encoding/json.Valid accepts: the
// inputs that are also UTF-8 and have no duplicate key. One pass, no
// decoding of values; it skips eight string bytes at a time when none of
// them is a quote, a backslash, a control character or non-ASCII, and
// allocates only for nesting deeper than 64, objects with more than
// linearKeys keys, and keys with escapes.
func Scan(b []byte) error {
	var (
		fixedFrames [64]frame
		fixedKeys   [256][]byte
	)
	s := scanner{b: b, frames: fixedFrames[:0], keys: fixedKeys[:0]}
	return s.scan()
}

func (s *scanner) scan() error {
	const (
		stValue = iota // a value must start at i
		stKey          // an object key must start at i
		stAfter        // a value ended before i
	)
	b := s.b
	i, st := skipSpace(b, 0), stValue
	for {
		switch st {
		case stValue:
			if i >= len(b) {
				return s.fail(i, Malformed)
			}
			switch c := b[i]; {
			case c == '{' || c == '[':
				if len(s.frames)+1 > MaxDepth {
					return s.fail(i, TooDeep)
				}
				i = skipSpace(b, i+1)
				if i < len(b) && b[i] == c+2 { // '}' and ']' are '{'+2 and '['+2
					i++
					st = stAfter
					continue
				}
				s.push(c == '{')
				if c == '{' {
					st = stKey
				}
			case c == '"':
				var r uint8
				if i, r = scanString(b, i+1); r >= strBad {
					return s.stringFail(i, r)
				}
				st = stAfter
			case c == '-' || (c >= '0' && c <= '9'):
				var ok bool
				if i, ok = scanNumber(b, i); !ok {
					return s.fail(i, Malformed)
				}
				st = stAfter
			case c == 't':
				if !hasLiteral(b, i, "true") {
					return s.fail(i, Malformed)
				}
				i += 4
				st = stAfter
			case c == 'f':
				if !hasLiteral(b, i, "false") {
					return s.fail(i, Malformed)
				}
				i += 5
				st = stAfter
			case c == 'n':
				if !hasLiteral(b, i, "null") {
					return s.fail(i, Malformed)
				}
				i += 4
				st = stAfter
			default:
				return s.fail(i, Malformed)
			}
		case stKey:
			if i >= len(b) || b[i] != '"' {
				return s.fail(i, Malformed)
			}
			start := i
			var r uint8
			if i, r = scanString(b, i+1); r >= strBad {
				return s.stringFail(i, r)
			}
			key := b[start+1 : i-1]
			if r == strEscaped {
				key = unescape(key)
			}
			if err := s.addKey(key, start); err != nil {
				return err
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return s.fail(i, Malformed)
			}
			i = skipSpace(b, i+1)
			st = stValue
		case stAfter:
			i = skipSpace(b, i)
			if len(s.frames) == 0 {
				if i != len(b) {
					return s.fail(i, Malformed)
				}
				return nil
			}
			if i >= len(b) {
				return s.fail(i, Malformed)
			}
			top := &s.frames[len(s.frames)-1]
			open := byte('[')
			if top.obj {
				open = '{'
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				if top.obj {
					st = stKey
				} else {
					top.index++
					st = stValue
				}
			case open + 2: // the closing bracket of top
				s.pop()
				i++
			default:
				return s.fail(i, Malformed)
			}
		}
	}
}

func (s *scanner) push(obj bool) {
	if len(s.frames) < cap(s.frames) {
		s.frames = s.frames[:len(s.frames)+1]
	} else {
		s.frames = append(s.frames, frame{})
	}
	f := &s.frames[len(s.frames)-1]
	f.obj, f.keys, f.index = obj, len(s.keys), 0
	if f.big != nil {
		clear(f.big)
	}
}

func (s *scanner) pop() {
	f := &s.frames[len(s.frames)-1]
	if f.obj {
		clear(s.keys[f.keys:]) // drop references to unescaped copies
		s.keys = s.keys[:f.keys]
	}
	s.frames = s.frames[:len(s.frames)-1]
}

// addKey records key in the innermost object; a key it already has is an
// error naming its path.
func (s *scanner) addKey(key []byte, at int) error {
	f := &s.frames[len(s.frames)-1]
	have := s.keys[f.keys:]
	switch {
	case f.big != nil:
		if _, dup := f.big[string(key)]; dup {
			return s.duplicate(key, at)
		}
		f.big[string(key)] = struct{}{}
	default:
		for _, k := range have {
			// Most keys of an entity differ in length or in their first
			// byte: that is checked before the bytes are compared.
			if len(k) == len(key) && (len(k) == 0 || k[0] == key[0]) && string(k) == string(key) {
				return s.duplicate(key, at)
			}
		}
		if len(have) == linearKeys {
			f.big = make(map[string]struct{}, 2*linearKeys)
			for _, k := range have {
				f.big[string(k)] = struct{}{}
			}
			f.big[string(key)] = struct{}{}
		}
	}
	s.keys = append(s.keys, key)
	return nil
}

func (s *scanner) duplicate(key []byte, at int) error {
	return &SyntaxError{Offset: at, Kind: DuplicateKey, Path: s.path(key)}
}

func (s *scanner) stringFail(at int, r uint8) error {
	if r == strBadUTF8 {
		return s.fail(at, InvalidUTF8)
	}
	return s.fail(at, Malformed)
}

func (s *scanner) fail(at int, k SyntaxErrorKind) error {
	e := &SyntaxError{Offset: at, Kind: k}
	if k == InvalidUTF8 {
		e.Path = s.path(nil)
	}
	return e
}

// Bounds of an error path, so that a hostile input cannot make an error
// message large: keys are cut, and a deep path keeps its ends.
const (
	maxPathKey   = 64
	maxPathParts = 24
)

// path names the innermost open value, then last (a key of it) if set,
// e.g. services[3].routes[0].name; the top level is "$".
func (s *scanner) path(last []byte) string {
	var parts []string
	for n, f := range s.frames {
		if !f.obj {
			parts = append(parts, "["+strconv.Itoa(f.index)+"]")
			continue
		}
		end := len(s.keys)
		if n+1 < len(s.frames) {
			end = s.frames[n+1].keys
		}
		if end > f.keys && (last == nil || n+1 < len(s.frames)) {
			parts = append(parts, pathKey(s.keys[end-1]))
		}
	}
	if last != nil {
		parts = append(parts, pathKey(last))
	}
	return joinPath(parts)
}

// joinPath joins the parts of a path (".key", "[3]"); a path deeper than
// maxPathParts keeps its ends.
func joinPath(parts []string) string {
	if len(parts) > maxPathParts {
		cut := len(parts) - maxPathParts
		parts = append(append(parts[:maxPathParts/2:maxPathParts/2], fmt.Sprintf("…(%d more)…", cut)), parts[len(parts)-maxPathParts/2:]...)
	}
	out := strings.TrimPrefix(strings.Join(parts, ""), ".")
	if out == "" {
		return "$"
	}
	return out
}

// pathKey writes a key as .name, or ["..."] when it is not a plain name.
func pathKey[K string | []byte](k K) string {
	plain := len(k) > 0 && len(k) <= maxPathKey
	for i := range len(k) {
		if c := k[i]; !(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			plain = false
			break
		}
	}
	if plain {
		return "." + string(k)
	}
	if len(k) > maxPathKey {
		return "[" + strconv.Quote(string(k[:maxPathKey])+"…") + "]"
	}
	return "[" + strconv.Quote(string(k)) + "]"
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special marks (high bit of each byte) the bytes of w that end a run of
// plain ASCII string bytes: '"', '\\', control characters (< 0x20) and
// non-ASCII bytes (checked as UTF-8). Only the lowest mark is exact (a
// borrow may mark bytes above it), which is all scanString uses.
func special(w uint64) uint64 {
	q := w ^ (ones * '"')
	s := w ^ (ones * '\\')
	return ((q-ones)&^q | (s-ones)&^s | (w-ones*0x20)&^w | w) & highs
}

// Outcomes of scanString.
const (
	strPlain   = iota // a string without escapes
	strEscaped        // a string with escapes
	strBad            // malformed
	strBadUTF8        // not UTF-8
)

// scanString scans a string whose opening quote is before i and returns
// the index after its closing quote and an outcome (where it stopped, on
// an error).
func scanString(b []byte, i int) (int, uint8) {
	res := uint8(strPlain)
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, strBad
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, res
		case c < 0x20:
			return i, strBad
		case c == '\\':
			res = strEscaped
			if i+1 >= len(b) {
				return i, strBad
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, strBad
				}
				i += 6
			default:
				return i, strBad
			}
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, strBadUTF8
			}
			i += n
		default:
			// Only in the tail of fewer than 8 bytes: a plain byte.
			i++
		}
	}
}

// unescape decodes the escapes of a scanned string's contents, as
// encoding/json does (an unpaired surrogate becomes U+FFFD).
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(raw[i+2:])); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}
