package engine

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// benchStatus is a failed sink's status as status() builds it.
func benchStatus() *confighubv1.SinkStatus {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &confighubv1.SinkStatus{
		Sink: "kong-eu-1", Kind: "kong", Stream: "default", State: stateBackoff,
		DesiredGeneration: 42, DesiredHash: "3f2a9c0d1e4b5a6f7c8d9e0f", AppliedGeneration: 41, AppliedHash: "0a1b2c3d4e5f60718293a4b5",
		Attempts: 3, LastError: "timeout: apply timed out after 30s", LastErrorCode: "timeout", AppliesTotal: 40,
		EntityErrors:  []*confighubv1.EntityError{{EntityType: "route", EntityName: "r1", Errors: []*confighubv1.FieldError{{Field: "paths", Message: "bad"}}}},
		NextRetryTime: timestamppb.New(now.Add(4 * time.Second)), LastApplyDuration: durationpb.New(1500 * time.Millisecond),
		LastAppliedTime: timestamppb.New(now.Add(-time.Minute)),
	}
}

// BenchmarkSameStatus and BenchmarkSameStatusProtoEqual: emit compares
// every status it builds with the last published one (several times per
// apply); sameStatus's doc comment names the figures.
func BenchmarkSameStatus(b *testing.B) {
	x, y := benchStatus(), benchStatus()
	y.EntityErrors = x.EntityErrors // status() shares them from one sink.Error
	for b.Loop() {
		if !sameStatus(x, y) {
			b.Fatal("differ")
		}
	}
}

func BenchmarkSameStatusProtoEqual(b *testing.B) {
	x, y := benchStatus(), benchStatus()
	for b.Loop() {
		if !proto.Equal(x, y) {
			b.Fatal("differ")
		}
	}
}

// TestSameStatusAgreesWithProtoEqual: sameStatus tells apart every field
// status() sets.
func TestSameStatusAgreesWithProtoEqual(t *testing.T) {
	base := benchStatus()
	changes := []func(*confighubv1.SinkStatus){
		func(s *confighubv1.SinkStatus) { s.State = stateApplied },
		func(s *confighubv1.SinkStatus) { s.DesiredGeneration++ },
		func(s *confighubv1.SinkStatus) { s.AppliedHash = "x" },
		func(s *confighubv1.SinkStatus) { s.Attempts++ },
		func(s *confighubv1.SinkStatus) { s.LastError = "" },
		func(s *confighubv1.SinkStatus) { s.Reason = "gated" },
		func(s *confighubv1.SinkStatus) { s.EntityErrors = nil },
		func(s *confighubv1.SinkStatus) { s.NextRetryTime = nil },
		func(s *confighubv1.SinkStatus) { s.LastApplyDuration = durationpb.New(time.Second) },
		func(s *confighubv1.SinkStatus) { s.LastAppliedTime = nil },
		func(s *confighubv1.SinkStatus) { s.DataPlane = &confighubv1.DataPlaneStatus{} },
	}
	for i, change := range changes {
		s := proto.Clone(base).(*confighubv1.SinkStatus)
		s.EntityErrors = base.EntityErrors
		change(s)
		if sameStatus(base, s) || proto.Equal(base, s) {
			t.Errorf("change %d: sameStatus %v, proto.Equal %v; want both false", i, sameStatus(base, s), proto.Equal(base, s))
		}
	}
	s := proto.Clone(base).(*confighubv1.SinkStatus)
	s.EntityErrors = base.EntityErrors
	if !sameStatus(base, s) {
		t.Error("an equal status differs")
	}
}

// TestSameStatusSeesEveryField: a change to any field of SinkStatus but the
// sink's identity makes sameStatus false, so a field added to the proto
// fails here until sameStatus compares it (else its changes are never
// published).
func TestSameStatusSeesEveryField(t *testing.T) {
	base := benchStatus()
	identity := map[protoreflect.Name]bool{"sink": true, "kind": true, "stream": true}
	fields := base.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if identity[f.Name()] {
			continue
		}
		s := proto.Clone(base).(*confighubv1.SinkStatus)
		s.EntityErrors = base.EntityErrors
		m := s.ProtoReflect()
		switch v := m.Get(f); {
		case f.IsList() && v.List().Len() > 0, f.Message() != nil && !f.IsList() && m.Has(f):
			m.Clear(f)
		case f.IsList():
			l := m.Mutable(f).List()
			l.Append(l.NewElement())
		case f.Message() != nil:
			m.Set(f, m.NewField(f))
		case f.Kind() == protoreflect.BoolKind:
			m.Set(f, protoreflect.ValueOfBool(!v.Bool()))
		case f.Kind() == protoreflect.EnumKind:
			m.Set(f, protoreflect.ValueOfEnum(v.Enum()+1))
		case f.Kind() == protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString(v.String()+"x"))
		case f.Kind() == protoreflect.Int32Kind:
			m.Set(f, protoreflect.ValueOfInt32(int32(v.Int())+1))
		case f.Kind() == protoreflect.Int64Kind:
			m.Set(f, protoreflect.ValueOfInt64(v.Int()+1))
		case f.Kind() == protoreflect.Uint32Kind:
			m.Set(f, protoreflect.ValueOfUint32(uint32(v.Uint())+1))
		case f.Kind() == protoreflect.Uint64Kind:
			m.Set(f, protoreflect.ValueOfUint64(v.Uint()+1))
		default:
			t.Fatalf("field %s: kind %s not handled by this test", f.Name(), f.Kind())
		}
		if sameStatus(base, s) {
			t.Errorf("field %s changed, and sameStatus still says equal", f.Name())
		}
	}
}
