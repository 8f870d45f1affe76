package dataplane

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
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

func clusterCert(t *testing.T) tls.Certificate {
	t.Helper()
	c, k, err := hybrid.GenerateClusterCert(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestFrameRules(t *testing.T) {
	cert := clusterCert(t)
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

func gzipped(t *testing.T, msg string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(msg))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestConfigHelperRules follows one connection of a Konnect-mode node
// through Kong 3.9.3's config_helper.update and data_plane.lua: updates
// that fail (config_table not an object, hashes null, an invalid entity, a
// plugin the node lacks)
// keep the connection and are reported, with no ping; one that loads is
// pinged at once; the control plane's ping is not answered.
func TestConfigHelperRules(t *testing.T) {
	cert := clusterCert(t)
	const h1, h2 = "11111111111111111111111111111111", "22222222222222222222222222222222"
	const table = `{"_format_version":"3.0","services":[{"name":"s","host":"h"}]}`
	result := make(chan error, 1)
	addr := fakeCP(t, cert, websocket.Upgrader{}, func(c *websocket.Conn) {
		pings, frames := make(chan string, 16), make(chan string, 16)
		var pongs atomic.Int32
		c.SetPingHandler(func(p string) error { pings <- p; return nil })
		c.SetPongHandler(func(string) error { pongs.Add(1); return nil })
		done := make(chan struct{})
		go func() { // the one reader; the handlers run in it
			defer close(done)
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				frames <- string(data)
			}
		}()
		defer func() { _ = c.Close(); <-done }()
		result <- func() error {
			if err := c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
				return err
			}
			wait := func(ch chan string) (string, error) {
				select {
				case s := <-ch:
					return s, nil
				case <-time.After(5 * time.Second):
					return "", errors.New("nothing came")
				}
			}
			if p, err := wait(pings); p != EmptyHash {
				return fmt.Errorf("first ping %q, %v", p, err)
			}
			for _, tc := range []struct{ msg, want string }{
				{`{"type":"reconfigure","config_table":"x","config_hash":"` + h1 + `"}`, `"name":"configuration reload failed"`},
				{`{"type":"reconfigure","config_table":` + table + `,"config_hash":"` + h1 + `","hashes":null}`, `"name":"configuration reload failed"`},
				{`{"type":"reconfigure","config_table":{"_format_version":"3.0","services":[{"name":"s","host":"h","port":70000}]},"config_hash":"` + h1 + `"}`, `"source":"kong.db.declarative.parse_table"`},
				// A plugin the node lacks (it has cors only) is a parse error.
				{`{"type":"reconfigure","config_table":{"_format_version":"3.0","plugins":[{"name":"rate-limiting","config":{"minute":5}}]},"config_hash":"` + h1 + `"}`, `"name":"declarative configuration parse failure"`},
			} {
				if err := c.WriteMessage(websocket.BinaryMessage, gzipped(t, tc.msg)); err != nil {
					return err
				}
				f, err := wait(frames)
				if err != nil || !strings.Contains(f, tc.want) || !strings.Contains(f, `"config_hash":"`+h1+`"`) {
					return fmt.Errorf("after %s: frame %s, %v; want %s", tc.msg, f, err, tc.want)
				}
			}
			if err := c.WriteMessage(websocket.BinaryMessage, gzipped(t, `{"type":"reconfigure","config_table":`+table+`,"config_hash":"`+h2+`"}`)); err != nil {
				return err
			}
			if p, err := wait(pings); p != h2 {
				return fmt.Errorf("the ping after the failed updates and the loaded one carries %q (%v), want %s", p, err, h2)
			}
			if n := pongs.Load(); n != 0 {
				return fmt.Errorf("the node answered the control plane's ping (%d pongs)", n)
			}
			return nil
		}()
	})
	d := Start(Options{Addr: addr, Cert: cert, NodeID: "n1", KonnectMode: true, Plugins: []string{"cors"}, PingInterval: time.Hour, ReconnectMin: time.Hour})
	defer d.Stop()
	select {
	case err := <-result:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the control plane saw no end")
	}
	if s := d.Stats(); s.Connects != 1 || s.Refusals != 4 || d.Hash() != h2 {
		t.Fatalf("stats %+v, hash %s", s, d.Hash())
	}
}
