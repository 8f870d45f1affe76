package server

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// recvPool hands out buffers of the length asked for and a capacity at
// least that, at and around every tier's bounds, whatever was put back
// before (buffers of every size are put back between the rounds).
func TestRecvPoolSizes(t *testing.T) {
	var p recvPool
	sizes := []int{0, 1, 255, 256, 257, 4095, 4096, 4097, 16 << 10, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3 << 20, 5<<20 + 3}
	for round := range 3 {
		var got []*[]byte
		for _, n := range sizes {
			b := p.Get(n)
			if len(*b) != n || cap(*b) < n {
				t.Fatalf("round %d: Get(%d) gave len %d cap %d", round, n, len(*b), cap(*b))
			}
			for i := range *b {
				(*b)[i] = byte(round)
			}
			got = append(got, b)
		}
		for _, b := range got {
			p.Put(b)
		}
	}
}

// unmarshalPush decodes what proto.Unmarshal decodes, and refuses what it
// refuses: every field, labels, unknown fields, a repeated or mistyped
// config field, invalid UTF-8, truncations.
func FuzzUnmarshalPush(f *testing.F) {
	full := &confighubv1.PushConfigRequest{Stream: "prod", Config: []byte(`{"_format_version":"3.0"}`), Format: confighubv1.Format_FORMAT_YAML,
		ExpectedGeneration: 7, Labels: map[string]string{"pod": "kic-1", "": "x"}}
	seed, err := proto.Marshal(full)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{})
	f.Add(protowire.AppendBytes(protowire.AppendTag(slices.Clone(seed), 2, protowire.BytesType), []byte("second")))
	f.Add(protowire.AppendVarint(protowire.AppendTag(slices.Clone(seed), 2, protowire.VarintType), 5))
	f.Add(protowire.AppendBytes(protowire.AppendTag(slices.Clone(seed), 99, protowire.BytesType), []byte("unknown")))
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff, 0xfe}))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, got := &confighubv1.PushConfigRequest{}, &confighubv1.PushConfigRequest{}
		werr := proto.Unmarshal(b, want)
		gerr := unmarshalPush(slices.Clone(b), got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("proto.Unmarshal: %v, unmarshalPush: %v", werr, gerr)
		}
		if werr == nil && !proto.Equal(want, got) {
			t.Fatalf("decoded %v, proto.Unmarshal decoded %v", got, want)
		}
	})
}

// BenchmarkUnmarshalPush decodes a push spread over the transport's 16 KiB
// frames, as a large unary PushConfig arrives.
func BenchmarkUnmarshalPush(b *testing.B) {
	for _, size := range []int{1 << 20, 20 << 20} {
		msg, err := proto.Marshal(&confighubv1.PushConfigRequest{Stream: "prod", Config: bytes.Repeat([]byte("x"), size)})
		if err != nil {
			b.Fatal(err)
		}
		var data mem.BufferSlice
		for rest := msg; len(rest) > 0; {
			n := min(len(rest), 16<<10)
			data = append(data, mem.SliceBuffer(rest[:n]))
			rest = rest[n:]
		}
		c := newCodec(&recvPool{})
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			cpu0 := cpuTime(b)
			for b.Loop() {
				var m confighubv1.PushConfigRequest
				if err := c.Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
				if len(m.Config) != size {
					b.Fatalf("config of %d bytes, want %d", len(m.Config), size)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
