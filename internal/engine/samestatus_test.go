package engine

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
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
