package server

import (
	"encoding/binary"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// uploadMsg is an UploadConfigRequest as UploadConfig receives it. A
// message that is one chunk and nothing else (what every client sends
// after the header) keeps its bytes where the transport received them:
// pieces are its parts of the receive buffers, in order, held (Ref) until
// release, not copied twice into a buffer and a slice as the proto codec
// would. Its chunk field is set but empty (so the oneof is set for the
// request validator); every other message is decoded by proto.Unmarshal.
type uploadMsg struct {
	*confighubv1.UploadConfigRequest
	pieces [][]byte
	held   mem.BufferSlice
}

// chunkField is UploadConfigRequest.chunk's field number.
var chunkField = (&confighubv1.UploadConfigRequest{}).ProtoReflect().Descriptor().Fields().ByName("chunk").Number()

// unmarshal decodes data into m (the codec's Unmarshal; grpc frees data
// after it returns, so a chunk kept as pieces takes its own reference).
func (m *uploadMsg) unmarshal(data mem.BufferSlice, pool mem.BufferPool) error {
	m.UploadConfigRequest, m.pieces, m.held = &confighubv1.UploadConfigRequest{}, nil, nil
	if off, ok := chunkOnly(data); ok {
		data.Ref()
		m.held = data
		for _, b := range data {
			p := b.ReadOnlyData()
			skip := min(off, len(p))
			off -= skip
			if len(p) > skip {
				m.pieces = append(m.pieces, p[skip:])
			}
		}
		m.Msg = &confighubv1.UploadConfigRequest_Chunk{}
		return nil
	}
	buf := data.MaterializeToBuffer(pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m.UploadConfigRequest)
}

// chunkOnly reports whether data is one chunk field and nothing else, and
// where the chunk's bytes start.
func chunkOnly(data mem.BufferSlice) (int, bool) {
	var head [2 * binary.MaxVarintLen64]byte // a tag and a length
	n := 0
	for _, b := range data {
		n += copy(head[n:], b.ReadOnlyData())
		if n == len(head) {
			break
		}
	}
	num, typ, tl := protowire.ConsumeTag(head[:n])
	if tl < 0 || num != chunkField || typ != protowire.BytesType {
		return 0, false
	}
	size, ll := protowire.ConsumeVarint(head[tl:n])
	if rest := data.Len() - tl - ll; ll < 0 || rest < 0 || uint64(rest) != size {
		return 0, false
	}
	return tl + ll, true
}

// chunk returns the received chunk's pieces and what releases them.
func (m *uploadMsg) chunk() ([][]byte, func()) {
	if m.held != nil {
		return m.pieces, m.free
	}
	return [][]byte{m.GetChunk()}, func() {}
}

// free releases what a message not handed on holds.
func (m *uploadMsg) free() {
	if m.held != nil {
		m.held.Free()
		m.held = nil
	}
}
