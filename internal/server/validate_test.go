package server

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// pushOf builds a request from fuzzed parts: labels is "k=v;k=v".
func pushOf(stream string, cfg []byte, format int32, labels string) *confighubv1.PushConfigRequest {
	p := &confighubv1.PushConfigRequest{Stream: stream, Config: cfg, Format: confighubv1.Format(format)}
	if labels != "" {
		p.Labels = map[string]string{}
		for kv := range strings.SplitSeq(labels, ";") {
			k, v, _ := strings.Cut(kv, "=")
			p.Labels[k] = v
		}
	}
	return p
}

// FuzzPushValidAgrees: whatever pushValid lets past protovalidate, the
// rules accept.
func FuzzPushValidAgrees(f *testing.F) {
	v, err := protovalidate.New()
	if err != nil {
		f.Fatal(err)
	}
	long := strings.Repeat("a", 63)
	for _, s := range []string{"", "default", "a", "0", "a.b_c-d", long, long + "a", "-a", ".a", "_a", "A", "aB", "a b", "é", "a/b"} {
		for _, labels := range []string{"", "by=kic", "=v", strings.Repeat("k", 128) + "=v", strings.Repeat("k", 129) + "=v", "k=" + strings.Repeat("v", 1024), "k=" + strings.Repeat("v", 1025)} {
			f.Add(s, []byte("{}"), int32(1), labels)
		}
	}
	f.Add("default", []byte{}, int32(0), "")
	f.Add("default", []byte("x"), int32(3), "")
	f.Add("default", []byte("x"), int32(-1), "")
	f.Fuzz(func(t *testing.T, stream string, cfg []byte, format int32, labels string) {
		p := pushOf(stream, cfg, format, labels)
		if _, err := proto.Marshal(p); err != nil {
			t.Skip("not a message a client can send (invalid UTF-8)")
		}
		if pushValid(p) {
			if err := v.Validate(p); err != nil {
				t.Fatalf("pushValid accepts stream %q, %d config bytes, format %d, labels %v; the rules refuse it: %v", p.Stream, len(p.Config), p.Format, p.Labels, err)
			}
		}
	})
}

// TestPushValidAgreesOnMany: pushValid accepts what the rules accept for
// generated requests near every bound (labels up to 14 and beyond, keys
// and values at and past their limits, stream names of every class of
// character), and refuses only what it must leave to protovalidate.
func TestPushValidAgreesOnMany(t *testing.T) {
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func(max int) string {
		alphabet := []rune("az09._-")
		if rng.IntN(4) == 0 {
			alphabet = []rune("az09._-AZ /é")
		}
		var b strings.Builder
		for range rng.IntN(max + 1) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	accepted, refused := 0, 0
	for range 5000 {
		p := &confighubv1.PushConfigRequest{Stream: str(70), Config: make([]byte, rng.IntN(3)), Format: confighubv1.Format(rng.IntN(5) - 1)}
		if n := rng.IntN(18); n > 0 {
			p.Labels = map[string]string{}
			for range n {
				p.Labels[strings.Repeat("k", rng.IntN(132))+fmt.Sprint(rng.IntN(100))] = strings.Repeat("v", rng.IntN(1030))
			}
		}
		fast, rules := pushValid(p), v.Validate(p) == nil
		if fast && !rules {
			t.Fatalf("pushValid accepts stream %q, %d config bytes, format %d, %d labels; the rules refuse it: %v", p.Stream, len(p.Config), p.Format, len(p.Labels), v.Validate(p))
		}
		if fast {
			accepted++
		} else if rules {
			refused++ // left to protovalidate, which accepts it: allowed
		}
	}
	if accepted == 0 {
		t.Fatal("pushValid accepted nothing: test does not test")
	}
	// A plain push, as controllers send it, takes the fast path.
	if !pushValid(&confighubv1.PushConfigRequest{Stream: "prod-1", Config: []byte("{}"), Format: confighubv1.Format_FORMAT_JSON, Labels: map[string]string{"by": "kic"}}) {
		t.Fatal("a plain push is left to protovalidate")
	}
	t.Logf("%d accepted by pushValid, %d valid ones left to protovalidate", accepted, refused)
}

// TestPushRulesAreKnown: PushConfigRequest's rules are the ones pushValid
// checks; change pushValid with them.
func TestPushRulesAreKnown(t *testing.T) {
	md := (&confighubv1.PushConfigRequest{}).ProtoReflect().Descriptor()
	if mr := proto.GetExtension(md.Options(), validate.E_Message).(*validate.MessageRules); mr != nil && proto.Size(mr) > 0 {
		t.Errorf("message rules %v", mr)
	}
	if md.Oneofs().Len() > 0 {
		t.Errorf("oneofs: %v", md.Oneofs())
	}
	want := map[string]string{
		"stream":              `string:{[confighub.v1.stream_name]:true}`,
		"config":              `bytes:{min_len:1}`,
		"format":              `enum:{defined_only:true}`,
		"expected_generation": ``,
		"labels":              `map:{[confighub.v1.labels]:true}`,
	}
	fields := md.Fields()
	if fields.Len() != len(want) {
		t.Errorf("%d fields, want %d", fields.Len(), len(want))
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		w, ok := want[string(fd.Name())]
		if !ok {
			t.Errorf("field %s is new", fd.Name())
			continue
		}
		got := ""
		if fr := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); fr != nil {
			got = strings.Join(strings.Fields(prototext.MarshalOptions{}.Format(fr)), "")
		}
		if got != strings.ReplaceAll(w, " ", "") {
			t.Errorf("field %s rules %q, want %q", fd.Name(), got, w)
		}
	}
	// The shared rules the fields name (rules.proto) are the ones
	// pushValid re-implements: a change to their CEL changes what it must
	// refuse, so check pushValid against the new rule, then update want.
	for x, want := range map[protoreflect.ExtensionType]string{
		confighubv1.E_StreamName: "ccf8541fff41bc48",
		confighubv1.E_Labels:     "a9bc001f23f16493",
	} {
		pr, _ := proto.GetExtension(x.TypeDescriptor().Options(), validate.E_Predefined).(*validate.PredefinedRules)
		h := sha256.New()
		for _, r := range pr.GetCel() {
			fmt.Fprintf(h, "%q %q %q\n", r.GetId(), r.GetMessage(), r.GetExpression())
		}
		if got := fmt.Sprintf("%x", h.Sum(nil))[:16]; got != want {
			t.Errorf("rule %s changed (fingerprint %s, pushValid knows %s):\n%v", x.TypeDescriptor().FullName(), got, want, prototext.Format(pr))
		}
	}
	// The enum values pushValid lets through are the defined ones.
	ed := confighubv1.Format(0).Descriptor()
	var defined []protoreflect.EnumNumber
	for i := range ed.Values().Len() {
		defined = append(defined, ed.Values().Get(i).Number())
	}
	if fmt.Sprint(defined) != "[0 1 2]" {
		t.Errorf("Format values %v, pushValid knows [0 1 2]", defined)
	}
}

// BenchmarkValidatePush: the rules' check of a plain push by protovalidate
// and by pushValid.
//
//	go test -run '^$' -bench BenchmarkValidatePush ./internal/server
func BenchmarkValidatePush(b *testing.B) {
	p := &confighubv1.PushConfigRequest{Stream: "prod-1", Config: []byte("{}"), Format: confighubv1.Format_FORMAT_JSON, Labels: map[string]string{"by": "kic"}}
	v, err := protovalidate.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("protovalidate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := v.Validate(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pushValid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !pushValid(p) {
				b.Fatal("refused")
			}
		}
	})
}
