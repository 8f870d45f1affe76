package config

import (
	"bytes"
	"encoding/binary"
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
	// (duplicate keys, error paths).
	sc scanner
	// borrow: the keys may borrow the bytes written (Scan, Check: one
	// Write of the whole document), else Write keeps them before it
	// returns.
	borrow bool
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
	fvRaw                [fvMax]byte // its first fvN bytes, escapes kept
	fvN                  int
	fvSeen               bool
	fvKind               byte // first byte of its value when not a string
	// fvScalar: the number or literal being read is _format_version: its
	// bytes go to fvRaw, so the refusal quotes what was written.
	fvScalar bool
	// err is the first error, wrapped as Check wraps it.
	err error
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
	s := &Scanner{}
	s.sc.init()
	return s
}

// Scan checks that b is exactly one JSON value (RFC 8259) with optional
// surrounding whitespace, strictly: every string is UTF-8, no object has a
// key twice (compared after unescaping, at any depth), nesting is at most
// MaxDepth. It accepts a subset of what encoding/json.Valid accepts: the
// inputs that are also UTF-8 and have no duplicate key. One pass, no
// decoding of values (Scanner's fast path over one piece); it allocates
// once for a configuration nesting at most 16 deep with at most 64 open
// keys, and more only for deeper nesting, more keys, objects with more
// than bigKeys keys and keys with escapes. A refusal is a *SyntaxError.
//
// It stands for a library because none meets the push-ack targets: on a
// generated 20 MiB configuration it checks at 1.9 GB/s, jsontext
// (go-json-experiment, the same refusals) at 0.62 and encoding/json.Valid
// (no duplicate-key check) at 0.42 (BenchmarkScan); with jsontext in
// Check a 20 MiB PushConfig acks in 1.98x the minimal durable ack, with
// Scan 1.12x (internal/server BenchmarkPushConfig/20480KiB/serial, medians
// of five alternated runs; the target is at most 1.2).
func Scan(b []byte) error {
	s := Scanner{borrow: true}
	s.sc.init()
	if _, err := s.write(b); err != nil {
		return err
	}
	return s.end()
}

// checkJSON is Check for JSON: Scan, then the top level and its
// _format_version as Scanner.Close judges them (no second pass).
func checkJSON(b []byte) (string, error) {
	s := Scanner{borrow: true}
	s.sc.init()
	if _, err := s.write(b); err != nil {
		return "", invalidJSON(err)
	}
	return s.Close()
}

func invalidJSON(err error) error {
	return fmt.Errorf("%w: not valid JSON: %w", ErrInvalid, err)
}

func (s *Scanner) fail(off int) error { return s.failKind(off, Malformed) }

// failKind is the error at byte off of the piece being written.
func (s *Scanner) failKind(off int, k SyntaxErrorKind) error {
	e := &SyntaxError{Offset: int(s.n) + off, Kind: k}
	if k == InvalidUTF8 {
		e.Path = s.sc.path(nil)
	}
	return e
}

// Write checks the next bytes of the document; it fails at the first
// invalid one (and from then on).
func (s *Scanner) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	i, err := s.write(p)
	if err != nil {
		s.err = invalidJSON(err)
	} else if !s.borrow {
		s.sc.keepAll()
	}
	s.sc.cur = nil
	return i, s.err
}

// write runs the fast path (fast) from every place between tokens, and
// this byte-wise state machine over what it leaves: a token cut by the
// end of p, the _format_version value, and whatever is wrong (so every
// refusal and its offset and path come from here).
func (s *Scanner) write(p []byte) (int, error) {
	s.sc.cur = p
	i := 0
	for i < len(p) {
		c := p[i]
		if s.fvScalar {
			s.keepScalar(c) // the byte that ends it too: Close trims it
		}
		switch s.st {
		case sString:
			start := i
			i = plainRun(p, i)
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
			if j, err := s.fast(p, i); err != nil {
				return j, err
			} else if j > i {
				i = j
				continue
			}
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
		if c != '{' && c != '[' {
			s.fvScalar = true
			s.keepScalar(c)
		}
	}
	switch {
	case c == '{' || c == '[':
		if len(s.sc.frames)+1 > MaxDepth {
			return s.failKind(i, TooDeep)
		}
		s.sc.push(c == '{')
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
	s.endValue()
}

// endValue moves on after a value (or a closed container).
func (s *Scanner) endValue() {
	s.fvScalar = false
	if len(s.sc.frames) == 0 {
		s.st = sEnd
		return
	}
	s.st = sAfter
}

// keepScalar adds a byte of a number or literal _format_version.
func (s *Scanner) keepScalar(c byte) {
	if s.fvN == fvMax {
		// The byte after a token of exactly fvMax bytes does not make it long.
		s.fvLong = s.fvLong || scalarByte(c)
		return
	}
	s.fvRaw[s.fvN] = c
	s.fvN++
}

// keep adds string bytes to the key or the _format_version being read.
func (s *Scanner) keep(b []byte) {
	switch {
	case s.inKey:
		s.key = append(s.key, b...)
	case s.fvOn && !s.fvLong:
		if s.fvN+len(b) > fvMax {
			s.fvLong = true
			return
		}
		s.fvN += copy(s.fvRaw[s.fvN:], b)
	}
}

// endString ends a string at i: a key is recorded in its object (a
// second one is an error naming its path) and moves on to its colon; a
// value ends.
func (s *Scanner) endString(i int) error {
	if s.inKey {
		s.inKey = false
		key := s.key
		if s.keyEsc {
			key = unescape(key)
		}
		if err := s.sc.addKey(s.sc.keep(key), key, s.keyAt); err != nil {
			return err
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

// end checks that the document ended (a number may end it).
func (s *Scanner) end() error {
	switch s.st {
	case sZero, sInt, sFrac, sExpDigits:
		s.endValue()
	}
	if s.st != sEnd {
		return s.fail(0)
	}
	return nil
}

// Why fastLoop stopped.
const (
	needWrite  = iota // at the end of p, or at a token for write
	needKey           // a key to record with slowKey
	needString        // a string with an escape or a non-ASCII byte
	needNumber        // a number with a sign, fraction or exponent
)

// fast consumes the whole tokens of p from i, starting between tokens
// (a structural state), and returns where it stopped: at the end of p, or
// at the start of a token it leaves to write (cut by the end of p, the
// _format_version value, the top-level value, nesting past the first
// memory) or at a byte that is wrong (write finds what). fastLoop does the
// common tokens without a call, so that nothing it keeps in registers is
// spilled; what needs a call (a key it cannot record in place, a string
// with escapes or non-ASCII bytes, a number that is not an integer) it
// hands back here, and is resumed after it.
func (s *Scanner) fast(p []byte, i int) (int, error) {
	for {
		if len(s.sc.frames) == 0 || s.fvNext {
			// The top-level value starts or ended, or the next value is
			// _format_version: write's.
			return i, nil
		}
		var (
			j    int
			r    uint8
			need uint8
		)
		i, j, need = s.fastLoop(p, i)
		switch need {
		case needString:
			// The string opens at i; j is its first escape or non-ASCII
			// byte.
			if j, r = scanStringRest(p, j); r >= strBad {
				return i, nil // write says what is wrong
			}
			if s.st == sKey || s.st == sKeyOrClose {
				if err := s.slowKey(p, i, j, r); err != nil {
					return i, err
				}
				i, s.st = j, sColon
				continue
			}
		case needKey:
			if err := s.slowKey(p, i, j, strPlain); err != nil {
				return i, err
			}
			i, s.st = j, sColon
			continue
		case needNumber:
			var ok bool
			if j, ok = scanNumber(p, i); !ok || j == len(p) {
				return i, nil // write's: wrong, or may go on in the next piece
			}
		default:
			return i, nil
		}
		i, s.st = j, sAfter
	}
}

// fastLoop is fast's loop over the common tokens: it jumps from token to
// token with the state in the program counter (no dispatch on a state per
// token) and calls nothing. A string is skipped sixteen bytes per test
// (special), an integer digit by digit, and a key of an inner object is
// added in place when its hash's bit is clear in the object's bloom
// filter or no key of the object has its hash. It returns where it
// stopped and why (need), with s.st the state there; for needKey j is
// after the closing quote of the key (which has no escape), for
// needString j is the byte that ended the plain run.
func (s *Scanner) fastLoop(p []byte, i int) (_, j int, need uint8) {
	p = p[:len(p):len(p)] // one bound for loads and slices
	var (
		sc  = &s.sc
		st  = s.st
		top = &sc.frames[len(sc.frames)-1] // the innermost open value
		c   byte
		h   uint64
	)
	switch st {
	case sKeyOrClose:
		goto keyOrClose
	case sKey:
		goto key
	case sColon:
		goto colon
	case sValueOrClose:
		goto valueOrClose
	case sValue:
		goto value
	case sAfter:
		goto after
	}
	goto stop

keyOrClose: // after '{'
	st = sKeyOrClose
	if i = skipSpace(p, i); i >= len(p) {
		goto stop
	}
	if p[i] == '}' {
		goto close
	}
	goto keyStart
key: // after ',' in an object
	st = sKey
	if i >= len(p) {
		goto stop
	}
	if p[i] <= ' ' {
		if i = skipSpace(p, i); i >= len(p) {
			goto stop
		}
	}
keyStart:
	if p[i] != '"' {
		goto stop
	}
	goto str
keyEnd: // a plain key's quotes are at i and j-1
	if i < 7 || j+7 > len(p) || j == i+2 || len(sc.keys) == cap(sc.keys) {
		need = needKey
		goto stop
	}
	h = keyHashAt(p, i, j)
	if bit := uint64(1) << (h >> 58); top.bloom&bit != 0 {
		// A big object or the top level (their bloom filters are full)
		// or an object becoming big is addKey's, and so is a key whose
		// hash is an earlier one's (maybe a duplicate: addKey compares).
		if top.big || len(sc.frames) == 1 || len(sc.keys)-int(top.keys) >= bigKeys {
			need = needKey
			goto stop
		}
		for _, o := range sc.keys[top.keys:] {
			if o.h == h {
				need = needKey
				goto stop
			}
		}
	} else {
		top.bloom |= bit
	}
	sc.keys = sc.keys[:len(sc.keys)+1] // not full (checked above)
	sc.keys[len(sc.keys)-1] = keyEntry{at: i + 1, n: j - i - 2, h: h}
	i = j
colon:
	st = sColon
	if i < len(p) && p[i] == ':' {
		i++
		goto value
	}
	if i = skipSpace(p, i); i >= len(p) || p[i] != ':' {
		goto stop
	}
	i++
	goto value
valueOrClose: // after '['
	st = sValueOrClose
	if i = skipSpace(p, i); i >= len(p) {
		goto stop
	}
	if p[i] == ']' {
		goto close
	}
	goto valueStart
value: // after ':', or ',' in an array
	st = sValue
	if i >= len(p) {
		goto stop
	}
	if p[i] <= ' ' {
		if i = skipSpace(p, i); i >= len(p) {
			goto stop
		}
	}
valueStart:
	if c = p[i]; c == '"' { // most values are strings: one test first
		goto str
	}
	switch c {
	case '{', '[':
		// A frame in place while the first memory lasts; then write's
		// (it grows the stack and checks MaxDepth).
		if len(sc.frames) == cap(sc.frames) || len(sc.frames) >= MaxDepth {
			goto stop
		}
		sc.frames = sc.frames[:len(sc.frames)+1]
		top = &sc.frames[len(sc.frames)-1]
		*top = frame{obj: c == '{', keys: int32(len(sc.keys)), kept: -1}
		i++
		if c == '{' {
			goto keyOrClose
		}
		goto valueOrClose
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// An integer in place; a leading zero with digits after it is
		// write's to refuse, a fraction or exponent scanNumber's.
		for j = i + 1; j < len(p) && p[j]-'0' < 10; j++ {
		}
		if j >= len(p) || c == '0' && j > i+1 {
			goto stop // a number at the end of p may go on in the next piece
		}
		if c = p[j]; c == '.' || c|0x20 == 'e' {
			need = needNumber
			goto stop
		}
		i = j
		goto after
	case '-':
		need = needNumber
		goto stop
	case 't':
		if !hasLiteral(p, i, "true") {
			goto stop
		}
		i += 4
		goto after
	case 'f':
		if !hasLiteral(p, i, "false") {
			goto stop
		}
		i += 5
		goto after
	case 'n':
		if !hasLiteral(p, i, "null") {
			goto stop
		}
		i += 4
		goto after
	}
	goto stop
after: // after a value
	st = sAfter
	if i >= len(p) {
		goto stop
	}
	if c = p[i]; c <= ' ' {
		if i = skipSpace(p, i); i >= len(p) {
			goto stop
		}
		c = p[i]
	}
	switch {
	case c == ',':
		i++
		if top.obj {
			goto key
		}
		top.index++
		goto value
	case c == '}' && top.obj, c == ']' && !top.obj:
		goto close
	}
	goto stop
close: // p[i] closes top
	if top.big || len(sc.frames) == 1 {
		goto stop // write's: a big object's map is cleared, the document ends
	}
	if top.obj {
		sc.keys = sc.keys[:top.keys]
		sc.owned = min(sc.owned, int(top.keys))
		if top.kept >= 0 {
			sc.arena = sc.arena[:top.kept]
		}
	}
	sc.frames = sc.frames[:len(sc.frames)-1]
	top = &sc.frames[len(sc.frames)-1]
	i++
	goto after
str: // a string (a key in the key states) opens at i
	for j = i + 1; j+16 <= len(p); j += 16 {
		m1 := special(binary.LittleEndian.Uint64(p[j : j+8]))
		m2 := special(binary.LittleEndian.Uint64(p[j+8 : j+16]))
		if m1|m2 != 0 {
			// The first word's count (8 when it has no mark) plus the
			// second's when it is 8, without a branch: string lengths
			// vary, so a branch on m1 would mispredict.
			n := bits.TrailingZeros64(m1) >> 3
			j += n + bits.TrailingZeros64(m2)>>3&-(n>>3)
			goto strSpecial
		}
	}
	for ; j < len(p); j++ { // the last bytes of p
		if c = p[j]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			goto strSpecial
		}
	}
	goto stop // cut by the end of p: write's
strSpecial:
	if p[j] != '"' {
		need = needString
		goto stop
	}
	j++
	if st == sKey || st == sKeyOrClose {
		goto keyEnd
	}
	i = j
	goto after
stop:
	s.st = st
	return i, j, need
}

// slowKey records the key whose quotes are at i and j-1 of p (r is its
// scanStringRest outcome) in the innermost object, where fastLoop cannot:
// it has escapes or non-ASCII text, is empty, is a top-level key (maybe
// _format_version), is near an end of p, finds the keys' memory full, may
// make its object big, or may be a duplicate (addKey compares).
func (s *Scanner) slowKey(p []byte, i, j int, r uint8) error {
	sc := &s.sc
	key := p[i+1 : j-1]
	var k keyEntry
	if r == strEscaped {
		key = unescape(key)
		k = sc.keep(key)
	} else {
		k = keyEntry{at: i + 1, n: len(key), h: keyHash(key)}
	}
	if err := sc.addKey(k, key, s.n+int64(i)); err != nil {
		return err
	}
	if len(sc.frames) == 1 && string(key) == fvKey && !s.fvSeen {
		s.fvNext = true
	}
	return nil
}

// Close checks that the document ended and is a configuration Check
// accepts, and returns its _format_version.
func (s *Scanner) Close() (string, error) {
	if s.err != nil {
		return "", s.err
	}
	if s.n == 0 {
		return "", fmt.Errorf("%w: the configuration is empty", ErrInvalid)
	}
	if err := s.end(); err != nil {
		s.err = invalidJSON(err)
		return "", s.err
	}
	if s.top != '{' {
		return "", fmt.Errorf("%w: the top level must be a mapping (object), got %s", ErrInvalid, kindOf([]byte{s.top}))
	}
	switch {
	case !s.fvSeen:
		return "", fmt.Errorf("%w: _format_version is missing (Kong needs one of %v)", ErrInvalid, SupportedFormatVersions)
	case s.fvKind != 0:
		return "", formatVersionNotString(scalarToken(s.fvRaw[:s.fvN], s.fvLong), s.fvKind)
	}
	raw := s.fvRaw[:s.fvN]
	if !s.fvLong {
		for _, v := range SupportedFormatVersions {
			if string(raw) == v {
				return v, nil // the common case, without a copy
			}
		}
	}
	v := string(raw) // a whole string, its escapes checked
	if bytes.IndexByte(raw, '\\') >= 0 && !s.fvLong {
		v = string(unescape(raw))
	}
	if s.fvLong || !supported(v) {
		return "", fmt.Errorf("%w: _format_version %q is not supported (Kong accepts %v)", ErrInvalid, v, SupportedFormatVersions)
	}
	return v, nil
}
