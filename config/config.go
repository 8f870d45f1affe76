package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// Format is the encoding of configuration bytes.
type Format int

const (
	// FormatUnknown asks Check to detect the format.
	FormatUnknown Format = iota
	FormatJSON
	FormatYAML
)

var formatNames = [...]string{"unknown", "json", "yaml"}

func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return "unknown"
	}
	return formatNames[f]
}

// ParseFormat is the inverse of Format.String.
func ParseFormat(s string) (Format, error) {
	if i := slices.Index(formatNames[:], s); i >= 0 {
		return Format(i), nil
	}
	return FormatUnknown, fmt.Errorf("unknown format %q", s)
}

// DefaultStream is the stream a push, request or sink without one targets.
const DefaultStream = "default"

// StreamName is the stream that name designates: DefaultStream when name is empty.
func StreamName(name string) string {
	if name == "" {
		return DefaultStream
	}
	return name
}

// SupportedFormatVersions are the _format_version values Kong 3.x accepts.
var SupportedFormatVersions = []string{"1.1", "2.1", "3.0"}

// ErrInvalid is wrapped by every error Check returns.
var ErrInvalid = errors.New("invalid configuration")

// Config is one accepted configuration of a stream, immutable and shared:
// never modify Raw, Labels or what JSON and YAML return. Build it with New.
type Config struct {
	Stream     string
	Generation uint64
	Hash       string // the hex SHA-256 of Raw
	Format     Format
	Raw        []byte // as pushed
	Labels     map[string]string
	AcceptTime time.Time
	Origin     Origin // who pushed it and how

	forms *forms // shared by the copies WithGeneration and WithOrigin make
}

// Origin says where a configuration came from.
type Origin struct {
	Pusher     string         // the name of the pusher's token, or "anonymous"
	Peer       string         // the pusher's address
	RollbackOf uint64         // the generation whose bytes this one restores, or 0
	Entities   map[string]int // the configuration's entities by type
}

// WithOrigin returns c with origin o: the same bytes, labels and forms.
func (c *Config) WithOrigin(o Origin) *Config {
	n := c.copy()
	n.Origin = o
	return n
}

// copy is a copy of c that shares its forms.
func (c *Config) copy() *Config {
	n := *c
	if n.forms == nil {
		n.forms = &forms{}
	}
	return &n
}

// forms holds the JSON and YAML forms of Raw (by Format), each made on first use.
type forms [FormatYAML + 1]struct {
	once sync.Once
	b    []byte
	err  error
}

// New builds a Config from accepted bytes; jsonForm, if not nil, is a YAML one's JSON form.
func New(stream string, gen uint64, hash string, f Format, raw, jsonForm []byte, labels map[string]string, accepted time.Time) *Config {
	c := &Config{Stream: stream, Generation: gen, Hash: hash, Format: f, Raw: raw, Labels: labels, AcceptTime: accepted, forms: &forms{}}
	if f == FormatJSON {
		jsonForm = raw
	}
	if jsonForm != nil {
		j := &c.forms[FormatJSON]
		j.once.Do(func() { j.b = jsonForm })
	}
	return c
}

// WithGeneration returns c as generation gen, sharing everything else.
func (c *Config) WithGeneration(gen uint64) *Config {
	n := c.copy()
	n.Generation = gen
	return n
}

// JSON returns the configuration as JSON, converted once; callers share it.
func (c *Config) JSON() ([]byte, error) { return c.form(FormatJSON) }

// YAML returns the configuration as YAML, converted once; callers share it.
func (c *Config) YAML() ([]byte, error) { return c.form(FormatYAML) }

// form returns Raw in format to, made on first use.
func (c *Config) form(to Format) ([]byte, error) {
	conv := func() ([]byte, error) {
		switch {
		case c.Format == to:
			return c.Raw, nil
		case to == FormatYAML:
			return yaml.JSONToYAML(c.Raw)
		default:
			return yamlToJSON(c.Raw)
		}
	}
	if c.forms == nil { // not built by New: nothing to share the form with
		return conv()
	}
	f := &c.forms[to]
	f.once.Do(func() { f.b, f.err = conv() })
	return f.b, f.err
}

// Size is the length of the configuration as pushed.
func (c *Config) Size() int { return len(c.Raw) }

// Hash returns the hex SHA-256 of b.
func Hash(b []byte) string {
	if len(b) <= hashPiece {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	h := NewHasher()
	_, _ = h.Write(b)
	return h.Sum()
}

// hashPiece bounds one call into SHA-256, whose assembly a stop of the
// world waits for (about 0.8 ms per MiB; 64 KiB take 50 us).
const hashPiece = 64 << 10

// Hasher computes Hash over bytes written in pieces of at most hashPiece.
type Hasher struct{ h hash.Hash }

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

// Write adds b (TestHasherPieces). It never fails.
func (h *Hasher) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > hashPiece {
		h.h.Write(b[:hashPiece])
		b = b[hashPiece:]
	}
	h.h.Write(b)
	return n, nil
}

// Sum returns the hex SHA-256 of the bytes written so far.
func (h *Hasher) Sum() string {
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.h.Sum(sum[:0]))
}

// Detect guesses the format: JSON when the first non-space byte is '{'.
func Detect(raw []byte) Format {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		return FormatJSON
	}
	return FormatYAML
}

// Checked is the outcome of Check.
type Checked struct {
	Format        Format
	JSON          []byte // Raw itself for JSON, the conversion for YAML
	FormatVersion string
}

// Check validates raw (f FormatUnknown: detected) as a Kong declarative
// configuration, strict where parsers disagree (no key twice, UTF-8, at most
// maxDepth levels, one YAML document), with a supported _format_version.
func Check(raw []byte, f Format) (Checked, error) {
	if len(raw) == 0 {
		return Checked{}, fmt.Errorf("%w: the configuration is empty", ErrInvalid)
	}
	if f == FormatUnknown {
		f = Detect(raw)
	}
	js, yamlRaw := raw, []byte(nil)
	if f == FormatYAML {
		var err error
		if js, err = yamlToJSON(raw); err != nil {
			return Checked{}, fmt.Errorf("%w: not valid YAML: %v", ErrInvalid, err)
		}
		yamlRaw = raw
	}
	s, err := scan(js)
	if err != nil {
		return Checked{}, err
	}
	fv, err := s.verdict(yamlRaw)
	if err != nil {
		return Checked{}, err
	}
	return Checked{Format: f, JSON: js, FormatVersion: fv}, nil
}

// formatVersionNotString refuses a _format_version that is not a string
// (text as written, first its JSON kind), saying when quoting it would do.
func formatVersionNotString(text string, first byte) error {
	kind := "a number"
	switch first {
	case '{', '[', 'n':
		got := map[byte]string{'{': "an object", '[': "an array", 'n': "null"}[first]
		return fmt.Errorf("%w: _format_version must be a string (Kong accepts %v), got %s", ErrInvalid, SupportedFormatVersions, got)
	case 't', 'f':
		kind = "a boolean"
	}
	if slices.Contains(SupportedFormatVersions, text) {
		return fmt.Errorf("%w: _format_version must be a string, got %s (%s): quote it, %q", ErrInvalid, text, kind, text)
	}
	return fmt.Errorf("%w: _format_version must be a string (Kong accepts %v), got %s (%s)", ErrInvalid, SupportedFormatVersions, text, kind)
}
