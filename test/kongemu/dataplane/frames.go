package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// frameTap reads a connection's server-to-client bytes for the WebSocket
// client and checks every frame header as it passes, with
// lua-resty-websocket's rules (protocol.lua recv_frame, the version Kong
// 3.9 pins): a fragment (FIN unset, or a continuation frame), an RSV bit
// or a payload over the max payload fails the read, and with it the
// connection, as it fails a real data plane's. It runs before the HTTP
// upgrade answer too, which it skips.
type frameTap struct {
	net.Conn
	max int64
	// upgraded: the HTTP answer's header is past (its end, CRLFCRLF, seen).
	upgraded bool
	crlf     int
	// hdr collects a frame header split across reads; skip is the
	// payload still to pass of the current frame.
	hdr  []byte
	skip int64
	err  error
	// frames counts the data frames seen.
	frames int
}

var errFragment = errors.New("fragmented frame: lua-resty-websocket answers \"again\" and the data plane drops the connection")

func (t *frameTap) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.Conn.Read(p)
	if n > 0 {
		if verr := t.scan(p[:n]); verr != nil {
			t.err = verr
			_ = t.Conn.Close()
			return 0, verr
		}
	}
	return n, err
}

func (t *frameTap) scan(b []byte) error {
	for len(b) > 0 {
		if !t.upgraded {
			c := b[0]
			b = b[1:]
			switch {
			case (t.crlf == 0 || t.crlf == 2) && c == '\r', (t.crlf == 1 || t.crlf == 3) && c == '\n':
				t.crlf++
			case c == '\r':
				t.crlf = 1
			default:
				t.crlf = 0
			}
			if t.crlf == 4 {
				t.upgraded = true
			}
			continue
		}
		if t.skip > 0 {
			k := min(t.skip, int64(len(b)))
			t.skip -= k
			b = b[k:]
			continue
		}
		t.hdr = append(t.hdr, b[0])
		b = b[1:]
		need := 2
		if len(t.hdr) >= 2 {
			switch t.hdr[1] & 0x7f {
			case 126:
				need = 4
			case 127:
				need = 10
			}
			if t.hdr[1]&0x80 != 0 {
				need += 4 // masked: a server never masks, the client library refuses it
			}
		}
		if len(t.hdr) < need {
			continue
		}
		h := t.hdr
		t.hdr = t.hdr[:0]
		fin, rsv, op := h[0]&0x80 != 0, h[0]&0x70, h[0]&0x0f
		var size int64
		switch h[1] & 0x7f {
		case 126:
			size = int64(binary.BigEndian.Uint16(h[2:4]))
		case 127:
			size = int64(binary.BigEndian.Uint64(h[2:10]))
		default:
			size = int64(h[1] & 0x7f)
		}
		if rsv != 0 {
			return fmt.Errorf("a frame with RSV bits %#x: the data plane negotiates no extension", rsv)
		}
		if op == 0 || (!fin && op < 8) {
			return errFragment
		}
		if size > t.max {
			return fmt.Errorf("a frame of %d bytes, over the max payload of %d bytes", size, t.max)
		}
		if op < 8 {
			t.frames++
		}
		t.skip = size
	}
	return nil
}
