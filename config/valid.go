package config

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth is encoding/json's nesting limit: Valid accepts what
// encoding/json.Valid accepts.
const maxDepth = 10000

// Valid reports whether b is exactly one JSON value (RFC 8259) with
// optional surrounding whitespace. It accepts the same inputs as
// encoding/json.Valid (no UTF-8 check inside strings, nesting up to 10000)
// and is several times faster on Kong configurations, which are mostly
// strings: it skips eight string bytes at a time when none of them is a
// quote, a backslash or a control character. It allocates only when
// nesting is deeper than 64.
func Valid(b []byte) bool {
	const (
		stValue = iota // a value must start at i
		stKey          // an object key must start at i
		stAfter        // a value ended before i
	)
	var fixed [64]byte
	stack := fixed[:0] // '{' or '[' per open container
	i, st := skipSpace(b, 0), stValue
	for {
		switch st {
		case stValue:
			if i >= len(b) {
				return false
			}
			switch c := b[i]; {
			case c == '{' || c == '[':
				if len(stack)+1 > maxDepth {
					return false
				}
				i = skipSpace(b, i+1)
				if i < len(b) && b[i] == c+2 { // '}' and ']' are '{'+2 and '['+2
					i++
					st = stAfter
					continue
				}
				stack = append(stack, c)
				if c == '{' {
					st = stKey
				}
			case c == '"':
				var ok bool
				if i, ok = scanString(b, i+1); !ok {
					return false
				}
				st = stAfter
			case c == '-' || (c >= '0' && c <= '9'):
				var ok bool
				if i, ok = scanNumber(b, i); !ok {
					return false
				}
				st = stAfter
			case c == 't':
				if !hasLiteral(b, i, "true") {
					return false
				}
				i += 4
				st = stAfter
			case c == 'f':
				if !hasLiteral(b, i, "false") {
					return false
				}
				i += 5
				st = stAfter
			case c == 'n':
				if !hasLiteral(b, i, "null") {
					return false
				}
				i += 4
				st = stAfter
			default:
				return false
			}
		case stKey:
			if i >= len(b) || b[i] != '"' {
				return false
			}
			var ok bool
			if i, ok = scanString(b, i+1); !ok {
				return false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = skipSpace(b, i+1)
			st = stValue
		case stAfter:
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				if top == '{' {
					st = stKey
				} else {
					st = stValue
				}
			case top + 2: // the closing bracket of top
				stack = stack[:len(stack)-1]
				i++
			default:
				return false
			}
		}
	}
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
// plain string bytes: '"', '\\' and control characters (< 0x20). Only the
// lowest mark is exact (a borrow may mark bytes above it), which is all
// scanString uses.
func special(w uint64) uint64 {
	q := w ^ (ones * '"')
	s := w ^ (ones * '\\')
	return ((q-ones)&^q | (s-ones)&^s | (w-ones*0x20)&^w) & highs
}

// scanString scans a string whose opening quote is before i and returns
// the index after its closing quote.
func scanString(b []byte, i int) (int, bool) {
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default:
			// Only in the tail of fewer than 8 bytes: a plain byte.
			i++
		}
	}
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
