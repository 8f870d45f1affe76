package server

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
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

// codec is grpc-go's proto codec, except that a received message spread
// over several buffers is assembled in one from pool (recvPool) instead
// of the default pool.
type codec struct {
	encoding.CodecV2 // the proto codec: Marshal, Name
	pool             mem.BufferPool
}

func newCodec(pool mem.BufferPool) codec {
	return codec{CodecV2: encoding.GetCodecV2(protoenc.Name), pool: pool}
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
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
