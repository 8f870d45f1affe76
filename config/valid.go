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

// bigKeys is how many keys of one object are deduplicated with a bloom
// filter and hashes before its keys go into a map: Kong entities have a
// dozen keys or two, and a map would cost an allocation per key. (A key
// whose bloom bit is clear is added without counting, so an object turns
// big at its first key past bigKeys whose bit is set.)
const bigKeys = 32

// frame is one open object or array. It holds no pointer, so a scan's
// memory is not scanned by the GC and costs no write barrier.
type frame struct {
	obj bool
	// big: past bigKeys keys, the object's keys are in scanner.sets[depth]
	// too, and bloom has every bit set.
	big bool
	// keys is where this object's keys start in scanner.keys (for an
	// array: how many keys were open when it opened).
	keys int32
	// index counts an array's elements (for error paths).
	index int32
	// kept is where this object's first kept key starts in scanner.arena,
	// -1 when it has none: the arena is cut back there when it closes.
	kept int
	// bloom has bit keyHash>>58 set for each key of the object: a new key
	// whose bit is clear is not a duplicate, with no compare.
	bloom uint64
}

// keyEntry is one key of an open object: its bytes are cur[at:at+n] (the
// piece being scanned) when at >= 0, else arena[-at-1:][:n]; h is its
// keyHash.
type keyEntry struct {
	at, n int
	h     uint64
}

// scanner is the bookkeeping of a scan: the open objects and arrays, and
// the keys of each open object (for duplicate keys and error paths).
type scanner struct {
	frames []frame
	// keys are the keys of every open object, outermost first, unescaped.
	keys []keyEntry
	// cur is the piece being scanned. A key borrows it until it is kept:
	// copied into arena (Scanner.Write keeps the keys[owned:] that borrow
	// it before it returns).
	cur   []byte
	arena []byte
	owned int
	// sets[d] holds the keys of the big object at depth d; its memory is
	// reused by the next big object at that depth.
	sets []map[string]struct{}
}

// scanMem is a scan's first memory, in one allocation without pointers:
// enough for Kong's configurations (about 6 deep, a few dozen open keys),
// so a small one costs one allocation, not one per slice grown.
type scanMem struct {
	frames [16]frame
	keys   [64]keyEntry
}

func (s *scanner) init() {
	m := new(scanMem)
	s.frames, s.keys = m.frames[:0], m.keys[:0]
}

// bytesOf is the bytes of a key.
func (s *scanner) bytesOf(k keyEntry) []byte {
	if k.at >= 0 {
		return s.cur[k.at : k.at+k.n]
	}
	return s.arena[-k.at-1:][:k.n]
}

func (s *scanner) push(obj bool) {
	if len(s.frames) < cap(s.frames) {
		s.frames = s.frames[:len(s.frames)+1]
	} else {
		s.frames = append(s.frames, frame{})
	}
	f := &s.frames[len(s.frames)-1]
	f.obj, f.keys, f.index, f.bloom, f.big, f.kept = obj, int32(len(s.keys)), 0, 0, false, -1
	if len(s.frames) == 1 {
		// Every top-level key goes through addKey (and is compared
		// with _format_version): the fast path adds none.
		f.bloom = ^uint64(0)
	}
}

func (s *scanner) pop() {
	f := &s.frames[len(s.frames)-1]
	if f.obj {
		s.keys = s.keys[:f.keys]
		s.owned = min(s.owned, int(f.keys))
		if f.kept >= 0 {
			s.arena = s.arena[:f.kept]
		}
		if f.big {
			clear(s.sets[len(s.frames)-1])
		}
	}
	s.frames = s.frames[:len(s.frames)-1]
}

// keyHash mixes a key's length and its first and last eight bytes (the
// whole key when shorter, read as one little-endian number): cheap, and
// distinct for the keys of Kong entities. A match is always confirmed by
// comparing the bytes. The fast path computes the same hash from two
// loads around the key (keyHashAt).
func keyHash(k []byte) uint64 {
	n := len(k)
	if n >= 8 {
		return mixKey(binary.LittleEndian.Uint64(k), binary.LittleEndian.Uint64(k[n-8:]), n)
	}
	var a uint64
	for i := n - 1; i >= 0; i-- {
		a = a<<8 | uint64(k[i])
	}
	return mixKey(a, a, n)
}

// keyHashAt is keyHash of the key between the quotes at i and j-1 of p,
// without a branch on its length, for a key of at least one byte with at
// least seven bytes of p before i and after j: the word at the key's
// start, masked to the key, and the word that ends with it, shifted down
// to it.
func keyHashAt(p []byte, i, j int) uint64 {
	n := j - i - 2
	sh := uint(max(8-n, 0)*8) & 63 // n >= 1: below 64
	a := binary.LittleEndian.Uint64(p[i+1:i+9]) & (^uint64(0) >> sh)
	b := binary.LittleEndian.Uint64(p[j-9:j-1]) >> sh
	return mixKey(a, b, n)
}

func mixKey(a, b uint64, n int) uint64 {
	return (a ^ bits.RotateLeft64(b, 29) ^ uint64(n)<<56) * 0x9e3779b97f4a7c15
}

// addKey records k (whose bytes are key, read at byte at) in the innermost
// object; a key it already has is an error naming its path.
func (s *scanner) addKey(k keyEntry, key []byte, at int64) error {
	depth := len(s.frames) - 1
	f := &s.frames[depth]
	bit := uint64(1) << (k.h >> 58)
	switch {
	case f.big:
		if _, dup := s.sets[depth][string(key)]; dup {
			return s.duplicate(key, at)
		}
		s.sets[depth][string(key)] = struct{}{}
	case f.bloom&bit != 0:
		for _, o := range s.keys[f.keys:] {
			if o.h == k.h && string(s.bytesOf(o)) == string(key) {
				return s.duplicate(key, at)
			}
		}
	}
	f.bloom |= bit
	s.keys = append(s.keys, k)
	if !f.big && len(s.keys)-int(f.keys) > bigKeys {
		// All bits set: the fast path adds no key to a big object.
		f.big, f.bloom = true, ^uint64(0)
		for len(s.sets) <= depth {
			s.sets = append(s.sets, nil)
		}
		if s.sets[depth] == nil {
			s.sets[depth] = make(map[string]struct{}, 2*bigKeys)
		}
		for _, o := range s.keys[f.keys:] {
			s.sets[depth][string(s.bytesOf(o))] = struct{}{}
		}
	}
	return nil
}

// keep copies key, a key of the innermost object, into the arena and
// returns its entry.
func (s *scanner) keep(key []byte) keyEntry {
	f := &s.frames[len(s.frames)-1]
	if f.kept < 0 {
		f.kept = len(s.arena)
	}
	m := len(s.arena)
	s.arena = append(s.arena, key...)
	return keyEntry{at: -m - 1, n: len(key), h: keyHash(key)}
}

// keepAll keeps every key that borrows the piece being written, so that
// the piece may go: the keys of the open objects read since the last call
// (a few per open object; all of them get cut back when their object
// closes).
func (s *scanner) keepAll() {
	for n := range s.frames {
		f := &s.frames[n]
		end := len(s.keys)
		if n+1 < len(s.frames) {
			end = int(s.frames[n+1].keys)
		}
		for j := max(int(f.keys), s.owned); j < end; j++ {
			k := &s.keys[j]
			if k.at < 0 {
				continue
			}
			if f.kept < 0 {
				f.kept = len(s.arena)
			}
			m := len(s.arena)
			s.arena = append(s.arena, s.cur[k.at:k.at+k.n]...)
			k.at = -m - 1
		}
	}
	s.owned = len(s.keys)
}

func (s *scanner) duplicate(key []byte, at int64) error {
	return &SyntaxError{Offset: int(at), Kind: DuplicateKey, Path: s.path(key)}
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
			parts = append(parts, "["+strconv.Itoa(int(f.index))+"]")
			continue
		}
		end := len(s.keys)
		if n+1 < len(s.frames) {
			end = int(s.frames[n+1].keys)
		}
		if end > int(f.keys) && (last == nil || n+1 < len(s.frames)) {
			parts = append(parts, pathKey(s.bytesOf(s.keys[end-1])))
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
		// One compare for a byte of compact JSON.
		if c := b[i]; c > ' ' || (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
			return i
		}
		i++
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
// borrow may mark bytes above it), which is all its callers use.
//
// Six operations, no compare: xor 0x02 maps '"' to 0x20 and keeps
// control characters below 0x20, so subtracting 0x21 borrows out of
// exactly those bytes below 0x80 and sets their high bit; xor '\\' maps
// '\\' to 0, so subtracting 1 borrows out of it alone. A byte from 0x80 up
// is marked by one of the two (its xor with '\\' minus 1 keeps the high
// bit, except 0xdc, which its xor with 0x02 minus 0x21 marks). Only a
// marked byte borrows, so no byte below the lowest mark is touched
// (TestSpecialMarksFirst).
func special(w uint64) uint64 {
	q := (w ^ ones*0x02) - ones*0x21
	e := (w ^ ones*'\\') - ones
	return (q | e) & highs
}

// plainRun returns the index of the first byte of b from i that is not a
// plain ASCII string byte (special), or len(b). Sixteen bytes per test:
// most strings of a configuration end within them, and their lengths
// vary, so a test per word would mispredict at one word or the other.
func plainRun(b []byte, i int) int {
	for i+16 <= len(b) {
		m1 := special(binary.LittleEndian.Uint64(b[i:]))
		m2 := special(binary.LittleEndian.Uint64(b[i+8:]))
		if m1|m2 != 0 {
			n := 8 + bits.TrailingZeros64(m2)>>3
			if m1 != 0 {
				n = bits.TrailingZeros64(m1) >> 3
			}
			return i + n
		}
		i += 16
	}
	if i+8 <= len(b) {
		if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(b) && b[i] >= 0x20 && b[i] < utf8.RuneSelf && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

// Outcomes of scanStringRest.
const (
	strPlain   = iota // a string without escapes
	strEscaped        // a string with escapes
	strBad            // malformed
	strBadUTF8        // not UTF-8
)

// scanStringRest goes on with a string at i, the first byte a plain run
// stopped at (an escape, a non-ASCII character, the closing quote or what
// is wrong), and returns the index after its closing quote and an outcome
// (where it stopped, on an error).
func scanStringRest(b []byte, i int) (int, uint8) {
	res := uint8(strPlain)
	for {
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
		default: // c >= utf8.RuneSelf
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, strBadUTF8
			}
			i += n
		}
		i = plainRun(b, i)
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
