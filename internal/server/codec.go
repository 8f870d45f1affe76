package server

import (
	"bytes"
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// recvPool is a mem.BufferPool that hands buffers out as they were last
// used, not cleared. grpc-go's default pool clears every buffer it hands
// out, up to its whole capacity: a received message larger than 1 MiB is
// assembled in a buffer from a pool of any size, so after one 20 MiB push
// every 1 MiB upload chunk could clear 20 MiB. Nothing here reads a byte
// it did not write first: the transport reads exactly a frame's length
// into its buffer, a message is copied whole into the buffer it is
// assembled in, and proto.Unmarshal copies what it keeps (bytes and
// strings) out of it (TestReceivedBytesAreExact).
type recvPool struct {
	// tiers[i] holds buffers of capacity at least 1<<(i+minTierExp).
	tiers [maxTierExp - minTierExp + 1]sync.Pool
	// large holds buffers above the largest tier, of any capacity.
	large sync.Pool
}

const (
	minTierExp = 8  // 256 B
	maxTierExp = 20 // 1 MiB
	pageSize   = 4096
)

var _ mem.BufferPool = (*recvPool)(nil)

// Get returns a buffer of length n whose bytes are stale.
func (p *recvPool) Get(n int) *[]byte {
	if n <= 1<<maxTierExp {
		e := max(minTierExp, bits.Len(uint(max(n, 1)-1)))
		if b, ok := p.tiers[e-minTierExp].Get().(*[]byte); ok {
			*b = (*b)[:n]
			return b
		}
		b := make([]byte, n, 1<<e)
		return &b
	}
	if b, ok := p.large.Get().(*[]byte); ok {
		if cap(*b) >= n {
			*b = (*b)[:n]
			return b
		}
		p.large.Put(b)
	}
	// Rounded up to a page, so slightly larger messages reuse it.
	b := make([]byte, n, (n+pageSize-1)&^(pageSize-1))
	return &b
}

// Put returns a buffer to the tier its capacity serves, or to large when
// it is larger than the largest tier (so that the next message of about
// its size finds it there).
func (p *recvPool) Put(b *[]byte) {
	c := cap(*b)
	switch e := bits.Len(uint(c)) - 1; {
	case c > 1<<maxTierExp:
		p.large.Put(b)
	case e >= minTierExp:
		p.tiers[e-minTierExp].Put(b)
	}
}

// codec is grpc-go's proto codec, except that: a message marshalled once
// for many streams (marshalled) is sent as it is; a PushConfigRequest
// spread over several buffers is assembled without clearing (assemble);
// an upload chunk keeps the receive buffers (uploadMsg); anything else
// spread over several buffers is assembled in one from pool (recvPool)
// instead of the default pool. With grpc-go's codec and pool, a 20 MiB
// PushConfig acks in 1.20x the minimal durable ack, against 1.05x with
// these (BenchmarkPushConfig/20480KiB/serial, medians of five alternated
// runs; the target is at most 1.2).
type codec struct {
	encoding.CodecV2 // the proto codec: Name, and Marshal of all but marshalled
	pool             mem.BufferPool
}

func newCodec(pool mem.BufferPool) codec {
	return codec{CodecV2: encoding.GetCodecV2(protoenc.Name), pool: pool}
}

// marshalled is a message already marshalled by the proto codec, sent as
// it is (a status event shared by watchers, see watchEncodings). Its bytes
// are never written after marshalling: every stream reads the same ones.
type marshalled struct{ b []byte }

// Marshal is the proto codec's, except that a marshalled message's bytes
// are sent as they are.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*marshalled); ok {
		// A SliceBuffer is not pooled: freeing it after the send is a no-op.
		return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
	}
	return c.CodecV2.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if p, ok := v.(*confighubv1.PushConfigRequest); ok && len(data) > 1 {
		return unmarshalPush(assemble(data), p)
	}
	if u, ok := v.(*uploadMsg); ok {
		return u.unmarshal(data, c.pool)
	}
	var m proto.Message
	switch v := v.(type) {
	case protoadapt.MessageV2:
		m = v
	case protoadapt.MessageV1:
		m = protoadapt.MessageV2Of(v)
	default:
		return fmt.Errorf("failed to unmarshal, message is %T, want proto.Message", v)
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// assemble copies a message spread over several buffers into one new
// slice. Unlike data.Materialize it does not clear the slice first
// (bytes.Join allocates without zeroing): every byte is written by the
// copy, and clearing a 20 MiB push cost as much as a third of copying it.
func assemble(data mem.BufferSlice) []byte {
	parts := make([][]byte, len(data))
	for i, b := range data {
		parts[i] = b.ReadOnlyData()
	}
	return bytes.Join(parts, nil)
}

// unmarshalPush decodes a PushConfigRequest whose config keeps the bytes
// of raw (a buffer of its own) instead of a copy: a large unary push is
// copied once from the transport's frames, not twice, and not held twice.
// Every other field goes through proto.Unmarshal as it came (UTF-8 checks,
// labels, unknown fields); as there, the last config field wins.
func unmarshalPush(raw []byte, m *confighubv1.PushConfigRequest) error {
	var cfg []byte
	var found bool
	rest := make([]byte, 0, 256)
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if num == configField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			cfg, found = v, true
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	if err := proto.Unmarshal(rest, m); err != nil {
		return err
	}
	if found {
		m.Config = cfg
	}
	return nil
}

// configField is PushConfigRequest.config's field number.
var configField = (&confighubv1.PushConfigRequest{}).ProtoReflect().Descriptor().Fields().ByName("config").Number()
