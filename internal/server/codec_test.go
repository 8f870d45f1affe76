package server

import (
	"bytes"
	"slices"
	"testing"

	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// countingPool hands out plain buffers and counts those put back.
type countingPool struct{ put int }

func (p *countingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.put++ }

// split cuts b into buffers of pool of every bytes (at least 1).
func split(b []byte, every int, pool mem.BufferPool) mem.BufferSlice {
	every = max(every, 1)
	var s mem.BufferSlice
	for off := 0; off < len(b); off += every {
		p := pool.Get(min(every, len(b)-off))
		copy(*p, b[off:])
		s = append(s, mem.NewBuffer(p, pool))
	}
	return s
}

// An upload chunk is decoded without a copy: its pieces are the receive
// buffers' own bytes, which stay out of the pool after grpc freed its
// reference and go back once the handler frees the message; the request
// still reads as a chunk (the oneof the validator requires is set).
func TestUploadChunkKeepsReceiveBuffers(t *testing.T) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 5<<10) // 80 KiB
	b, err := proto.Marshal(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: chunk}})
	if err != nil {
		t.Fatal(err)
	}
	pool := &countingPool{}
	data := split(b, 16<<10, pool)
	m := &uploadMsg{}
	if err := (codec{encoding.GetCodecV2(protoenc.Name)}).Unmarshal(data, m); err != nil {
		t.Fatal(err)
	}
	data.Free() // as grpc does once Unmarshal returned
	if pool.put != 0 {
		t.Fatalf("%d receive buffers went back to the pool while the message holds them", pool.put)
	}
	if _, ok := m.GetMsg().(*confighubv1.UploadConfigRequest_Chunk); !ok {
		t.Fatalf("decoded message is %T, want a chunk", m.GetMsg())
	}
	pieces, free := m.chunk()
	if got := bytes.Join(pieces, nil); !bytes.Equal(got, chunk) {
		t.Fatalf("pieces hold %d bytes that differ from the %d-byte chunk", len(got), len(chunk))
	}
	for i, p := range pieces {
		if !slices.ContainsFunc(data, func(d mem.Buffer) bool { r := d.ReadOnlyData(); return &r[len(r)-1] == &p[len(p)-1] }) {
			t.Fatalf("piece %d is a copy, not a receive buffer's bytes", i)
		}
	}
	pooled := 0 // mem.NewBuffer pools no buffer at or below the threshold
	for _, d := range data {
		if !mem.IsBelowBufferPoolingThreshold(d.Len()) {
			pooled++
		}
	}
	free()
	if pool.put != pooled || pooled < 5 {
		t.Fatalf("%d of %d receive buffers back in the pool after free", pool.put, pooled)
	}
}

// Whatever the bytes and however the transport cut them, an
// UploadConfigRequest decodes as proto.Unmarshal decodes it: a chunk
// alone as pieces, anything else (the header, unknown or repeated fields,
// bad input) through proto.Unmarshal.
func FuzzUnmarshalUpload(f *testing.F) {
	chunk, err := proto.Marshal(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: []byte(`{"_format_version":"3.0"}`)}})
	if err != nil {
		f.Fatal(err)
	}
	hdr, err := proto.Marshal(&confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{Stream: "prod", TotalSize: 9}}})
	if err != nil {
		f.Fatal(err)
	}
	for _, cut := range []int{1, 2, 7, 1 << 10} {
		f.Add(chunk, cut)
		f.Add(hdr, cut)
		f.Add(chunk[:len(chunk)-3], cut)
		f.Add(append(slices.Clone(hdr), chunk...), cut)
		f.Add(append(slices.Clone(chunk), chunk...), cut)
		f.Add(protowire.AppendBytes(protowire.AppendTag(slices.Clone(chunk), 99, protowire.BytesType), []byte("unknown")), cut)
		f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), nil), cut)
		f.Add([]byte{0x92, 0x00, 0x03, 'a', 'b', 'c'}, cut) // an overlong tag
	}
	f.Add([]byte{}, 1)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		want := &confighubv1.UploadConfigRequest{}
		werr := proto.Unmarshal(b, want)
		pool := &countingPool{}
		data := split(b, cut%64, pool)
		m := &uploadMsg{}
		gerr := (codec{encoding.GetCodecV2(protoenc.Name)}).Unmarshal(data, m)
		data.Free()
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("proto.Unmarshal: %v, uploadMsg: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		got := m.UploadConfigRequest
		if m.held != nil { // a chunk alone, as pieces
			pieces, _ := m.chunk()
			got = &confighubv1.UploadConfigRequest{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: bytes.Join(pieces, nil)}}
		}
		m.free()
		if !proto.Equal(want, got) {
			t.Fatalf("decoded %v, proto.Unmarshal decoded %v", got, want)
		}
	})
}
