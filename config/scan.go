package config

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// Scanner is Check for a JSON configuration that arrives in pieces (an
// upload's chunks): Write the bytes in order, cut anywhere, then Close.
// It keeps no more than the nesting stack and a few bytes of the
// top-level key being read, so a configuration is checked as it streams
// to disk without being held in memory. It accepts exactly what Check
// accepts for FormatJSON (well-formed as encoding/json.Valid judges it, a
// top-level object, a supported _format_version string: the first one
// among the top-level keys), and Write fails at the first byte that
// cannot start or continue a valid document, so an upload can stop there.
type Scanner struct {
	n  int64 // bytes written before the current Write
	st scanState
	// sc holds the open objects and arrays with the keys of each object
	// (Scan's bookkeeping: duplicate keys, error paths); the keys live in
	// arena, cut back when their object closes.
	sc    scanner
	arena []byte
	marks []int
	// top is the kind of the top-level value (its first byte).
	top byte
	// lit is the rest of a literal (true, false, null) being matched.
	lit string
	// hex counts the digits still due in a \u escape.
	hex int
	// rune holds the bytes of a non-ASCII character cut by a piece.
	rune  [utf8.UTFMax]byte
	runeN int
	// The key being read (raw, escapes kept) and whether it has escapes.
	inKey, keyEsc bool
	keyAt         int64
	key           []byte
	// fvNext: the next value is the top level's _format_version.
	fvNext, fvOn, fvLong bool
	fvRaw                []byte
	fvSeen               bool
	fvKind               byte // first byte of its value when not a string
	err                  error
}

type scanState uint8

const (
	sValue        scanState = iota // a value must start (or whitespace)
	sValueOrClose                  // after '[': a value or ']'
	sKeyOrClose                    // after '{': a key or '}'
	sKey                           // after ',' in an object: a key
	sColon                         // after a key
	sAfter                         // after a value
	sString                        // in a string
	sRune                          // in a non-ASCII character of a string
	sEscape                        // after a backslash in a string
	sHex                           // in the digits of a \u escape
	sNeg                           // after '-'
	sZero                          // after a leading 0
	sInt                           // in the integer digits
	sDot                           // after '.'
	sFrac                          // in the fraction digits
	sExp                           // after 'e' or 'E'
	sExpSign                       // after the exponent's sign
	sExpDigits                     // in the exponent digits
	sLiteral                       // in true, false or null
	sEnd                           // the top-level value ended
)

const fvKey = "_format_version"

// fvMax bounds the _format_version bytes kept (no supported version is
// longer).
const fvMax = 64

// NewScanner returns a Scanner at the start of a document.
func NewScanner() *Scanner {
	return &Scanner{sc: scanner{frames: make([]frame, 0, 64), keys: make([][]byte, 0, 256)}}
}

func (s *Scanner) fail(off int) error { return s.failKind(off, Malformed) }

// failKind ends the scan with Check's error for JSON.
func (s *Scanner) failKind(off int, k SyntaxErrorKind) error {
	e := &SyntaxError{Offset: int(s.n) + off, Kind: k}
	if k == InvalidUTF8 {
		e.Path = s.sc.path(nil)
	}
	return s.failWith(e)
}

func (s *Scanner) failWith(e error) error {
	s.err = fmt.Errorf("%w: not valid JSON: %w", ErrInvalid, e)
	return s.err
}

// Write checks the next bytes of the document; it fails at the first
// invalid one (and from then on).
func (s *Scanner) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	i := 0
	for i < len(p) {
		c := p[i]
		switch s.st {
		case sString:
			start := i
			for i+8 <= len(p) {
				if m := special(binary.LittleEndian.Uint64(p[i:])); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
			for i < len(p) && p[i] >= 0x20 && p[i] < utf8.RuneSelf && p[i] != '"' && p[i] != '\\' {
				i++
			}
			s.keep(p[start:i])
			if i == len(p) {
				continue
			}
			switch c = p[i]; {
			case c == '"':
				if err := s.endString(i); err != nil {
					return i, err
				}
			case c == '\\':
				s.keep(p[i : i+1])
				if s.inKey {
					s.keyEsc = true
				}
				s.st = sEscape
			case c >= utf8.RuneSelf:
				s.st = sRune
				continue
			default:
				return i, s.fail(i)
			}
			i++
			continue
		case sRune:
			// A non-ASCII character, maybe cut by a piece: checked as
			// UTF-8 once whole.
			s.rune[s.runeN] = c
			s.runeN++
			if !utf8.FullRune(s.rune[:s.runeN]) {
				break
			}
			if r, n := utf8.DecodeRune(s.rune[:s.runeN]); r == utf8.RuneError && n == 1 {
				return i, s.failKind(i-s.runeN+1, InvalidUTF8)
			}
			s.keep(s.rune[:s.runeN])
			s.runeN = 0
			s.st = sString
		case sEscape:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.st = sString
			case 'u':
				s.st, s.hex = sHex, 4
			default:
				return i, s.fail(i)
			}
			s.keep(p[i : i+1])
		case sHex:
			if !isHex(c) {
				return i, s.fail(i)
			}
			s.keep(p[i : i+1])
			if s.hex--; s.hex == 0 {
				s.st = sString
			}
		case sValue, sValueOrClose, sKeyOrClose, sKey, sColon, sAfter, sEnd:
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			if err := s.structural(c, i); err != nil {
				return i, err
			}
		case sNeg:
			switch {
			case c == '0':
				s.st = sZero
			case c >= '1' && c <= '9':
				s.st = sInt
			default:
				return i, s.fail(i)
			}
		case sZero, sInt:
			switch {
			case s.st == sInt && isDigit(c):
			case c == '.':
				s.st = sDot
			case c == 'e' || c == 'E':
				s.st = sExp
			default:
				s.endValue()
				continue // c is read again after the number
			}
		case sDot, sFrac:
			switch {
			case isDigit(c):
				s.st = sFrac
			case s.st == sFrac && (c == 'e' || c == 'E'):
				s.st = sExp
			case s.st == sFrac:
				s.endValue()
				continue
			default:
				return i, s.fail(i)
			}
		case sExp:
			switch {
			case c == '+' || c == '-':
				s.st = sExpSign
			case isDigit(c):
				s.st = sExpDigits
			default:
				return i, s.fail(i)
			}
		case sExpSign, sExpDigits:
			switch {
			case isDigit(c):
				s.st = sExpDigits
			case s.st == sExpDigits:
				s.endValue()
				continue
			default:
				return i, s.fail(i)
			}
		case sLiteral:
			if c != s.lit[0] {
				return i, s.fail(i)
			}
			if s.lit = s.lit[1:]; s.lit == "" {
				s.endValue()
			}
		}
		i++
	}
	s.n += int64(len(p))
	return len(p), nil
}

// structural handles a non-space byte where a value, a key, a colon, a
// comma or a closing bracket may be.
func (s *Scanner) structural(c byte, i int) error {
	switch s.st {
	case sColon:
		if c != ':' {
			return s.fail(i)
		}
		s.st = sValue
		return nil
	case sKeyOrClose, sKey:
		switch {
		case c == '"':
			s.inKey, s.keyEsc, s.keyAt = true, false, s.n+int64(i)
			s.key = s.key[:0]
			s.st = sString
			return nil
		case c == '}' && s.st == sKeyOrClose:
			s.close()
			return nil
		}
		return s.fail(i)
	case sAfter:
		top := &s.sc.frames[len(s.sc.frames)-1]
		switch {
		case c == ',' && top.obj:
			s.st = sKey
		case c == ',':
			top.index++
			s.st = sValue
		case c == '}' && top.obj, c == ']' && !top.obj:
			s.close()
		default:
			return s.fail(i)
		}
		return nil
	case sEnd:
		return s.fail(i)
	case sValueOrClose:
		if c == ']' {
			s.close()
			return nil
		}
	}
	// A value starts.
	if len(s.sc.frames) == 0 {
		s.top = c
	}
	fv := s.fvNext
	s.fvNext = false
	if fv && c != '"' {
		s.fvSeen, s.fvKind = true, c
	}
	switch {
	case c == '{' || c == '[':
		if len(s.sc.frames)+1 > MaxDepth {
			return s.failKind(i, TooDeep)
		}
		s.sc.push(c == '{')
		s.marks = append(s.marks, len(s.arena))
		if c == '{' {
			s.st = sKeyOrClose
		} else {
			s.st = sValueOrClose
		}
	case c == '"':
		if fv {
			s.fvOn = true
		}
		s.st = sString
	case c == '-':
		s.st = sNeg
	case c == '0':
		s.st = sZero
	case c >= '1' && c <= '9':
		s.st = sInt
	case c == 't':
		s.st, s.lit = sLiteral, "rue"
	case c == 'f':
		s.st, s.lit = sLiteral, "alse"
	case c == 'n':
		s.st, s.lit = sLiteral, "ull"
	default:
		return s.fail(i)
	}
	return nil
}

// close ends the innermost object or array; its keys go.
func (s *Scanner) close() {
	s.sc.pop()
	s.arena = s.arena[:s.marks[len(s.marks)-1]]
	s.marks = s.marks[:len(s.marks)-1]
	s.endValue()
}

// endValue moves on after a value (or a closed container).
func (s *Scanner) endValue() {
	if len(s.sc.frames) == 0 {
		s.st = sEnd
		return
	}
	s.st = sAfter
}

// keep adds string bytes to the key or the _format_version being read.
func (s *Scanner) keep(b []byte) {
	switch {
	case s.inKey:
		s.key = append(s.key, b...)
	case s.fvOn && !s.fvLong:
		if len(s.fvRaw)+len(b) > fvMax {
			s.fvLong = true
			return
		}
		s.fvRaw = append(s.fvRaw, b...)
	}
}

// endString ends a string at i: a key is recorded in its object (a
// second one is an error naming its path) and moves on to its colon; a
// value ends.
func (s *Scanner) endString(i int) error {
	if s.inKey {
		s.inKey = false
		mark := len(s.arena)
		if s.keyEsc {
			s.arena = append(s.arena, unescape(s.key)...)
		} else {
			s.arena = append(s.arena, s.key...)
		}
		key := s.arena[mark:len(s.arena):len(s.arena)]
		if err := s.sc.addKey(key, int(s.keyAt)); err != nil {
			return s.failWith(err)
		}
		if len(s.sc.frames) == 1 && !s.fvSeen && string(key) == fvKey {
			s.fvNext = true
		}
		s.st = sColon
		return nil
	}
	if s.fvOn {
		s.fvOn, s.fvSeen = false, true
	}
	s.endValue()
	return nil
}

// unquote decodes the JSON string body b (without quotes); "" when it
// does not decode.
func unquote(b []byte) string {
	var out string
	q := make([]byte, 0, len(b)+2)
	q = append(append(append(q, '"'), b...), '"')
	if json.Unmarshal(q, &out) != nil {
		return ""
	}
	return out
}

// Close checks that the document ended and is a configuration Check
// accepts, and returns its _format_version.
func (s *Scanner) Close() (string, error) {
	if s.err != nil {
		return "", s.err
	}
	switch s.st {
	case sZero, sInt, sFrac, sExpDigits:
		s.endValue()
	}
	if s.st != sEnd {
		if s.n == 0 {
			return "", fmt.Errorf("%w: the configuration is empty", ErrInvalid)
		}
		return "", s.fail(0)
	}
	if s.top != '{' {
		return "", fmt.Errorf("%w: the top level must be a mapping (object), got %s", ErrInvalid, kindOf([]byte{s.top}))
	}
	switch {
	case !s.fvSeen:
		return "", fmt.Errorf("%w: _format_version is missing (Kong needs one of %v)", ErrInvalid, SupportedFormatVersions)
	case s.fvKind != 0:
		return "", fmt.Errorf("%w: _format_version must be a string, got %s", ErrInvalid, kindOf([]byte{s.fvKind}))
	}
	v := unquote(s.fvRaw)
	if s.fvLong || !supported(v) {
		return "", fmt.Errorf("%w: _format_version %q is not supported (Kong accepts %v)", ErrInvalid, v, SupportedFormatVersions)
	}
	return v, nil
}
