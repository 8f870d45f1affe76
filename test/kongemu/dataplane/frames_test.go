package dataplane

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/confighub/confighub/internal/hybrid"
)

// fakeCP serves /v1/outlet with cert and runs send after basic_info.
func fakeCP(t *testing.T, cert tls.Certificate, up websocket.Upgrader, send func(*websocket.Conn)) string {
	t.Helper()
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAnyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
		send(c)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return lis.Addr().String()
}

func TestFrameRules(t *testing.T) {
	c, k, err := hybrid.GenerateClusterCert(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		up   websocket.Upgrader
		send func(*websocket.Conn)
		want string
	}{
		{"a fragmented frame", websocket.Upgrader{WriteBufferSize: 1024}, func(c *websocket.Conn) {
			w, _ := c.NextWriter(websocket.BinaryMessage)
			_, _ = w.Write([]byte(strings.Repeat("x", 5000))) // larger than the write buffer: fragments
			_ = w.Close()
		}, "fragmented frame"},
		{"a frame over the max payload", websocket.Upgrader{}, func(c *websocket.Conn) {
			_ = c.WriteMessage(websocket.BinaryMessage, make([]byte, 2048))
		}, "over the max payload"},
		{"a frame that is not gzip", websocket.Upgrader{}, func(c *websocket.Conn) {
			_ = c.WriteMessage(websocket.BinaryMessage, []byte(`{"type":"reconfigure"}`))
		}, "inflate_gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeCP(t, cert, tc.up, tc.send)
			d := Start(Options{Addr: addr, Cert: cert, NodeID: "n1", MaxPayload: 1024, ReconnectMin: time.Hour})
			defer d.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for {
				s := d.Stats()
				if s.LastErr != nil {
					if !strings.Contains(s.LastErr.Error(), tc.want) {
						t.Fatalf("connection ended with %v, want %q", s.LastErr, tc.want)
					}
					return
				}
				if ctx.Err() != nil {
					t.Fatal("the connection did not end")
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
