package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// maxDepth is jsontext's (and encoding/json's) nesting limit; fvMax bounds
// how much of a refused _format_version a message quotes.
const (
	maxDepth = 10000
	fvKey    = "_format_version"
	fvMax    = 64
)

// Scanner is Check for a JSON configuration written in pieces cut anywhere,
// then Closed. It holds the names of the open objects, not the document, and
// Write fails at the first piece that cannot continue a valid one. jsontext
// reads strictly (RFC 7493: UTF-8, no name twice, at most maxDepth levels).
type Scanner struct {
	in  pieces
	dec *jsontext.Decoder
	n   int64 // bytes written
	// top is the top-level value's kind (0 before it); done: it ended.
	top  jsontext.Kind
	done bool
	// fvNext: the next token is the top level's _format_version.
	fvNext, fvSeen bool
	fvKind         jsontext.Kind
	fv             string
	err            error
}

// pieces feeds the decoder the piece being written, then errMore, then
// io.EOF once closed; the decoder resumes where it stopped (TestScannerEverySplit).
type pieces struct {
	p      []byte
	closed bool
}

var errMore = errors.New("more")

func (r *pieces) Read(b []byte) (int, error) {
	switch {
	case len(r.p) > 0:
		n := copy(b, r.p)
		r.p = r.p[n:]
		return n, nil
	case r.closed:
		return 0, io.EOF
	}
	return 0, errMore
}

// NewScanner returns a Scanner at the start of a document.
func NewScanner() *Scanner {
	s := &Scanner{}
	s.dec = jsontext.NewDecoder(&s.in)
	return s
}

// scan reads a whole JSON document as Scanner does: fast, else token by token.
func scan(js []byte) (*Scanner, error) {
	s := &Scanner{dec: jsontext.NewDecoder(bytes.NewBuffer(js)), n: int64(len(js))}
	if s.fast() {
		return s, nil
	}
	s = &Scanner{dec: jsontext.NewDecoder(bytes.NewBuffer(js)), n: int64(len(js))}
	return s, s.end()
}

// fast reads a top-level object value by value (1.5 times the token loop's rate), if valid.
func (s *Scanner) fast() bool {
	if s.dec.PeekKind() != '{' {
		return false
	}
	_, err := s.dec.ReadToken()
	for err == nil && s.dec.PeekKind() == '"' {
		var name, tok jsontext.Token
		if name, err = s.dec.ReadToken(); err != nil || name.String() != fvKey {
			if err == nil {
				_, err = s.dec.ReadValue()
			}
			continue
		}
		s.fvSeen, s.fvKind = true, s.dec.PeekKind()
		if s.fvKind == '{' || s.fvKind == '[' {
			_, err = s.dec.ReadValue()
		} else if tok, err = s.dec.ReadToken(); err == nil {
			s.fv = tok.String()
		}
	}
	if err == nil {
		_, err = s.dec.ReadToken() // '}': a name was not next
	}
	if _, end := s.dec.ReadToken(); err != nil || end != io.EOF {
		return false
	}
	s.top, s.done = '{', true
	return true
}

// Write checks the next bytes of the document, keeping no reference to p.
func (s *Scanner) Write(p []byte) (int, error) {
	if s.err == nil {
		s.n += int64(len(p))
		s.in.p = p
		s.err = s.run()
		s.in.p = nil
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// Close checks that the document ended as Check accepts, and returns its _format_version.
func (s *Scanner) Close() (string, error) {
	if s.n == 0 && s.err == nil {
		return "", fmt.Errorf("%w: the configuration is empty", ErrInvalid)
	}
	if err := s.end(); err != nil {
		return "", err
	}
	return s.verdict(nil)
}

// end reads what is left and checks that one whole value was read.
func (s *Scanner) end() error {
	s.in.closed = true
	if s.err == nil {
		s.err = s.run()
	}
	if s.err == nil && !s.done {
		s.err = invalidJSON(fmt.Sprintf("syntax error near byte %d: unexpected end of input", s.dec.InputOffset()))
	}
	return s.err
}

// run reads the tokens the input holds, noting the top level's kind and _format_version.
func (s *Scanner) run() error {
	for {
		if s.done && s.dec.PeekKind() != 0 {
			u := s.dec.UnreadBuffer()
			at := s.dec.InputOffset() + int64(len(u)-len(bytes.TrimLeft(u, " \t\r\n")))
			return invalidJSON(fmt.Sprintf("syntax error near byte %d: data after the top-level value", at))
		}
		tok, err := s.dec.ReadToken()
		if err != nil {
			if err == io.EOF || errors.Is(err, errMore) {
				return nil // at the end, end judges
			}
			return s.refusal(err)
		}
		if s.top == 0 {
			s.top = tok.Kind()
		} else if s.fvNext {
			s.fvNext, s.fvKind = false, tok.Kind()
			if s.fvKind != '{' && s.fvKind != '[' {
				s.fv = tok.String()
			}
		}
		switch depth := s.dec.StackDepth(); {
		case depth == 0:
			s.done = true
		case depth == 1 && s.top == '{' && !s.fvSeen:
			if _, n := s.dec.StackIndex(1); n%2 == 1 && tok.String() == fvKey {
				s.fvNext, s.fvSeen = true, true
			}
		}
	}
}

// verdict wants a top-level object with a supported _format_version (yamlRaw: the YAML read, if any).
func (s *Scanner) verdict(yamlRaw []byte) (string, error) {
	switch {
	case s.top != '{':
		return "", fmt.Errorf("%w: the top level must be a mapping (object), got %s", ErrInvalid, kindOf(s.top))
	case !s.fvSeen:
		return "", fmt.Errorf("%w: _format_version is missing (Kong needs one of %v)", ErrInvalid, SupportedFormatVersions)
	case s.fvKind != '"':
		text := s.fv
		if yamlRaw != nil {
			text = yamlScalarText(yamlRaw, text) // the JSON form writes YAML's 3.0 as 3
		}
		return "", formatVersionNotString(clip(text), byte(s.fvKind))
	case !slices.Contains(SupportedFormatVersions, s.fv):
		return "", fmt.Errorf("%w: _format_version %q is not supported (Kong accepts %v)", ErrInvalid, clip(s.fv), SupportedFormatVersions)
	}
	return s.fv, nil
}

func invalidJSON(msg string) error {
	return fmt.Errorf("%w: not valid JSON: %s", ErrInvalid, msg)
}

// refusal says what is wrong, at which byte, and where.
func (s *Scanner) refusal(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return invalidJSON(err.Error())
	}
	switch why := se.Err.Error(); {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		return invalidJSON(fmt.Sprintf("duplicate key %s (byte %d): an object may hold each key once", s.path(se.JSONPointer), se.ByteOffset))
	case strings.HasPrefix(why, "invalid UTF-8"):
		return invalidJSON(fmt.Sprintf("invalid UTF-8 in a string at byte %d (in %s)", se.ByteOffset, s.path(se.JSONPointer)))
	case strings.Contains(why, "exceeded max depth"):
		return invalidJSON(fmt.Sprintf("the nesting is too deep at byte %d: objects and arrays may nest at most %d levels", se.ByteOffset, maxDepth))
	default: // jsontext's words quote what it has buffered: they vary with the cuts
		return invalidJSON(fmt.Sprintf("syntax error near byte %d", se.ByteOffset))
	}
}

// path writes a JSON pointer as services[3].routes[0].name.
func (s *Scanner) path(ptr jsontext.Pointer) string {
	var parts []string
	for tok := range ptr.Tokens() {
		if i := len(parts) + 1; i <= s.dec.StackDepth() {
			if k, _ := s.dec.StackIndex(i); k == '[' {
				parts = append(parts, "["+tok+"]")
				continue
			}
		}
		parts = append(parts, pathKey(tok))
	}
	return joinPath(parts)
}

// Bounds of an error path, so that hostile input cannot make a message large.
const (
	maxPathKey   = 64
	maxPathParts = 24
)

// joinPath joins the parts of a path, keeping the ends of a deep one; the top level is "$".
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
func pathKey(k string) string {
	plain := len(k) > 0 && len(k) <= maxPathKey
	for i := range len(k) {
		if c := k[i]; !(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			plain = false
			break
		}
	}
	if plain {
		return "." + k
	}
	if len(k) > maxPathKey {
		return "[" + strconv.Quote(k[:maxPathKey]+"…") + "]"
	}
	return "[" + strconv.Quote(k) + "]"
}

// clip is s, cut to fvMax bytes and "..." when longer.
func clip(s string) string {
	if len(s) > fvMax {
		return s[:fvMax] + "..."
	}
	return s
}

func kindOf(k jsontext.Kind) string {
	const neither = " (bytes that are neither a JSON object nor a YAML mapping)"
	switch k {
	case '[':
		return "an array"
	case 'n':
		return "null"
	case '"':
		return "a string" + neither
	}
	return "a scalar" + neither
}
