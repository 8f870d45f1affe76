package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// ErrPlaceholder: a sink spec holds a placeholder that stands for no stored value.
var ErrPlaceholder = errors.New("redacted placeholder")

// FingerprintKeyBytes is the size of a fingerprint key.
const FingerprintKeyBytes = 32

// fingerprintHex is how many hex digits of the HMAC a placeholder shows.
const fingerprintHex = 12

var placeholderRE = regexp.MustCompile(`^<redacted:([0-9a-f]{12})>$`)

// SinkSecrets hides the fields of sink specs marked (confighub.v1.secret)
// as "<redacted:FP>", FP the first hex digits of HMAC-SHA256(key, value):
// without the key no guess can be tested offline. Safe for concurrent use.
type SinkSecrets struct {
	key []byte
}

// NewSinkSecrets returns the redactor keyed with key (nil: a random one).
func NewSinkSecrets(key []byte) *SinkSecrets {
	if len(key) == 0 {
		key = make([]byte, FingerprintKeyBytes)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	return &SinkSecrets{key: append([]byte(nil), key...)}
}

// placeholder is what a secret value shows as.
func (r *SinkSecrets) placeholder(v *structpb.Value) string {
	m := hmac.New(sha256.New, r.key)
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
		m.Write([]byte(s.StringValue))
	} else {
		// An object or list: its JSON, keys sorted.
		b, _ := json.Marshal(v.AsInterface()) // a structpb.Value always encodes
		m.Write(b)
	}
	return "<redacted:" + hex.EncodeToString(m.Sum(nil))[:fingerprintHex] + ">"
}

// Redact returns a copy of s with every secret set replaced by its placeholder.
func (r *SinkSecrets) Redact(s *confighubv1.Sink) *confighubv1.Sink {
	if s == nil {
		return nil
	}
	out, _ := leaves(s, func(l leaf) error {
		if isSet(l.val) {
			l.set(structpb.NewStringValue(r.placeholder(l.val)))
		}
		return nil
	})
	return out
}

// leaves calls visit for every secret value of a copy of s, in a stable order, until it fails.
func leaves(s *confighubv1.Sink, visit func(leaf) error) (*confighubv1.Sink, error) {
	out := proto.Clone(s).(*confighubv1.Sink)
	return out, secretLeaves(out.ProtoReflect(), "", visit)
}

// Restore returns a copy of in with each placeholder replaced by the value
// stored (may be nil) has there if its fingerprint matches, else ErrPlaceholder.
func (r *SinkSecrets) Restore(in, stored *confighubv1.Sink) (*confighubv1.Sink, error) {
	if in == nil {
		return nil, nil
	}
	old := map[string]*structpb.Value{}
	if stored != nil {
		_, _ = leaves(stored, func(l leaf) error {
			old[l.path] = l.val
			return nil
		})
	}
	out, err := leaves(in, func(l leaf) error {
		v := l.val.GetStringValue()
		switch {
		case v == Placeholder:
			return fmt.Errorf("%w: %s is %s without a fingerprint: send the value itself, or the placeholder as read", ErrPlaceholder, l.path, Placeholder)
		case looksRedacted(v) && !IsPlaceholder(v):
			return fmt.Errorf("%w: %s is %.64q, not a placeholder as the hub writes it (<redacted:12 lower-case hex digits>): send the value itself, or the placeholder as read", ErrPlaceholder, l.path, v)
		case !IsPlaceholder(v):
			return nil
		}
		prev, ok := old[l.path]
		switch {
		case !ok || !isSet(prev):
			return fmt.Errorf("%w: %s is %s but the sink stores no value there: send the value itself", ErrPlaceholder, l.path, v)
		case r.placeholder(prev) != v:
			return fmt.Errorf("%w: %s is %s, which is not the fingerprint of the stored value: send the value itself", ErrPlaceholder, l.path, v)
		}
		l.set(prev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FindPlaceholder names the first secret field of s that holds a placeholder.
func FindPlaceholder(s *confighubv1.Sink) (string, bool) {
	var found string
	_, _ = leaves(s, func(l leaf) error {
		if looksRedacted(l.val.GetStringValue()) {
			found = l.path
			return errStop
		}
		return nil
	})
	return found, found != ""
}

var errStop = errors.New("stop")

// IsPlaceholder reports whether v is a fingerprinted placeholder.
func IsPlaceholder(v string) bool { return placeholderRE.MatchString(v) }

// looksRedacted reports whether v reads as a placeholder of any form.
func looksRedacted(v string) bool {
	v = strings.TrimSpace(v)
	return len(v) >= len("<redacted>") && strings.EqualFold(v[:len("<redacted")], "<redacted") && strings.HasSuffix(v, ">")
}

// SecretValues returns every secret value set in s, to scrub text with.
func SecretValues(s *confighubv1.Sink) []string {
	var vals []string
	_, _ = leaves(s, func(l leaf) error {
		if str, ok := l.val.GetKind().(*structpb.Value_StringValue); ok && str.StringValue != "" {
			vals = append(vals, str.StringValue)
		}
		return nil
	})
	return vals
}

func isSet(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return false
	case *structpb.Value_StringValue:
		return k.StringValue != ""
	}
	return true
}

// leaf is one secret value: its path in the spec, the value, and how to replace it.
type leaf struct {
	path string
	val  *structpb.Value
	set  func(*structpb.Value)
}

// secretLeaves calls visit for every secret value of m.
func secretLeaves(m protoreflect.Message, path string, visit func(leaf) error) error {
	var err error
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len() && err == nil; i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		p := join(path, string(fd.Name()))
		if isSecret(fd) {
			err = secretField(m, fd, p, visit)
			continue
		}
		switch {
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				err = secretLeaves(v.Message(), p+"["+strconv.Quote(k.String())+"]", visit)
				return err == nil
			})
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := m.Get(fd).List()
			for j := 0; j < l.Len() && err == nil; j++ {
				err = secretLeaves(l.Get(j).Message(), p+"["+strconv.Itoa(j)+"]", visit)
			}
		case !fd.IsMap() && !fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			err = secretLeaves(m.Mutable(fd).Message(), p, visit)
		}
	}
	return err
}

func isSecret(fd protoreflect.FieldDescriptor) bool {
	opts := fd.Options()
	return opts != nil && proto.GetExtension(opts, confighubv1.E_Secret).(bool)
}

// secretField visits the values of a field marked secret: a string, a map
// or list of strings, or a Struct's settings whose names are secret.
func secretField(m protoreflect.Message, fd protoreflect.FieldDescriptor, path string, visit func(leaf) error) error {
	str := func(p, v string, set func(protoreflect.Value)) error {
		return visit(leaf{path: p, val: structpb.NewStringValue(v), set: func(nv *structpb.Value) { set(protoreflect.ValueOfString(nv.GetStringValue())) }})
	}
	switch {
	case fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
		mp := m.Mutable(fd).Map()
		var keys []protoreflect.MapKey
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k)
			return true
		})
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			if err := str(path+"["+strconv.Quote(k.String())+"]", mp.Get(k).String(), func(v protoreflect.Value) { mp.Set(k, v) }); err != nil {
				return err
			}
		}
	case fd.IsList() && fd.Kind() == protoreflect.StringKind:
		l := m.Mutable(fd).List()
		for j := 0; j < l.Len(); j++ {
			if err := str(path+"["+strconv.Itoa(j)+"]", l.Get(j).String(), func(v protoreflect.Value) { l.Set(j, v) }); err != nil {
				return err
			}
		}
	case fd.Kind() == protoreflect.StringKind:
		return str(path, m.Get(fd).String(), func(v protoreflect.Value) { m.Set(fd, v) })
	case fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == "google.protobuf.Struct":
		if st, ok := m.Mutable(fd).Message().Interface().(*structpb.Struct); ok {
			return structLeaves(st, path, visit)
		}
	}
	return nil
}

// structLeaves visits the values of st under secret names, searching the others.
func structLeaves(st *structpb.Struct, path string, visit func(leaf) error) error {
	for _, k := range slices.Sorted(maps.Keys(st.GetFields())) {
		v, p := st.Fields[k], join(path, k)
		var err error
		if SecretName(k) {
			err = visit(leaf{path: p, val: v, set: func(nv *structpb.Value) { st.Fields[k] = nv }})
		} else {
			err = valueLeaves(v, p, visit)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func valueLeaves(v *structpb.Value, path string, visit func(leaf) error) error {
	if st := v.GetStructValue(); st != nil {
		return structLeaves(st, path, visit)
	}
	for i, e := range v.GetListValue().GetValues() {
		if err := valueLeaves(e, path+"["+strconv.Itoa(i)+"]", visit); err != nil {
			return err
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// SecretName reports whether a setting's name marks its value as secret: it holds a secret part, or
// one of its words (split at non-alphanumerics and lower-to-upper changes) is a secret word.
func SecretName(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range []string{"token", "secret", "passw", "credential", "apikey", "privatekey", "authorization"} {
		if strings.Contains(lower, p) {
			return true
		}
	}
	var word []rune
	prev := rune(0)
	for _, c := range name + " " {
		inWord := unicode.IsLetter(c) || unicode.IsDigit(c)
		if !inWord || unicode.IsUpper(c) && unicode.IsLower(prev) {
			if secretWords[strings.ToLower(string(word))] {
				return true
			}
			word = word[:0]
		}
		if inWord {
			word = append(word, c)
		}
		prev = c
	}
	return false
}

// secretWords are the secret words that no secret part above contains.
var secretWords = map[string]bool{"pwd": true, "passphrase": true, "key": true, "keys": true, "auth": true,
	"bearer": true, "cookie": true, "private": true, "signature": true, "pat": true, "pem": true}
