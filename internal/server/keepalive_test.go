package server_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/server"
)

// keepaliveScale divides the keepalive durations in these tests. gRPC's
// keepalive runs on real time, and grpc-go's client refuses to ping more
// often than every 10 s, so the tests speak HTTP/2 themselves (h2Client)
// and run the production policy and the controller's 10 s cadence 20
// times faster: pings every 500 ms for 3 s stand for pings every 10 s for
// 60 s. TestDefaultKeepalive checks the unscaled values.
const keepaliveScale = 20

// controllerPing is how often a controller pings on a long WatchStatus.
const controllerPing = 10 * time.Second

func scaled(k server.Keepalive) server.Keepalive {
	return server.Keepalive{MinClientPing: k.MinClientPing / keepaliveScale, PingAfterIdle: k.PingAfterIdle / keepaliveScale, PingTimeout: k.PingTimeout / keepaliveScale}
}

// TestDefaultKeepalive: the production policy permits a client that pings
// every 10 s, and drops a silent peer within a minute.
func TestDefaultKeepalive(t *testing.T) {
	k := server.DefaultKeepalive()
	if k.MinClientPing <= 0 || k.MinClientPing > controllerPing {
		t.Errorf("MinClientPing %s: a client pinging every %s is cut", k.MinClientPing, controllerPing)
	}
	if k.PingAfterIdle <= 0 || k.PingTimeout <= 0 || k.PingAfterIdle+k.PingTimeout > time.Minute {
		t.Errorf("PingAfterIdle %s + PingTimeout %s: a dead watcher is held longer than a minute", k.PingAfterIdle, k.PingTimeout)
	}
}

// TestWatchSurvivesClientKeepalive: a WatchStatus whose client pings every
// 10 s stays open for 60 s (scaled), and so does a connection with no
// stream pinging at the same rate. The control case shows what the test
// catches: gRPC's default policy cuts that client with GOAWAY
// ENHANCE_YOUR_CALM "too_many_pings".
func TestWatchSurvivesClientKeepalive(t *testing.T) {
	every, lasting := controllerPing/keepaliveScale, 6*controllerPing/keepaliveScale
	t.Run("default policy", func(t *testing.T) {
		t.Parallel()
		addr := startServer(t, server.WithKeepalive(scaled(server.DefaultKeepalive())))
		var wg sync.WaitGroup
		for _, watch := range []bool{true, false} {
			wg.Go(func() {
				c := dialH2(t, addr)
				if watch {
					c.watch(t)
				}
				sent := c.pingFor(every, lasting)
				if g := c.goAway(); g != nil {
					t.Errorf("watch=%v: cut after %d pings: GOAWAY %v %q", watch, sent, g.code, g.debug)
					return
				}
				if err := c.err(); err != nil {
					t.Errorf("watch=%v: connection closed after %d pings: %v", watch, sent, err)
					return
				}
				if watch && c.streamEnded.Load() {
					t.Errorf("the watch ended after %d pings", sent)
				}
				c.awaitPingAcks(t, sent)
			})
		}
		wg.Wait()
	})
	t.Run("control: gRPC defaults", func(t *testing.T) {
		t.Parallel()
		addr := startServer(t, server.WithKeepalive(server.Keepalive{}))
		c := dialH2(t, addr)
		c.watch(t)
		c.pingFor(every, lasting)
		g := c.goAway()
		if g == nil || g.code != http2.ErrCodeEnhanceYourCalm || g.debug != "too_many_pings" {
			t.Fatalf("gRPC's default policy should cut a client pinging every %s (scaled): GOAWAY %+v", controllerPing, g)
		}
	})
}

// TestDeadWatcherIsDropped: a watcher that stops answering (its node died
// without closing the connection) is pinged once idle and its connection
// closed when the ping goes unanswered, ending the watch.
func TestDeadWatcherIsDropped(t *testing.T) {
	k := scaled(server.DefaultKeepalive())
	addr := startServer(t, server.WithKeepalive(k))
	c := dialH2(t, addr)
	c.answerPings.Store(false)
	c.watch(t)
	start := time.Now()
	select {
	case <-c.closed:
	case <-time.After(30 * time.Second):
		t.Fatalf("a watcher that answers no ping is still connected after 30 s (policy %+v)", k)
	}
	if c.serverPings.Load() == 0 {
		t.Fatalf("the connection closed (%v) without a keepalive ping", c.err())
	}
	t.Logf("dropped %s after the watch started (ping after %s idle, timeout %s)", time.Since(start).Round(time.Millisecond), k.PingAfterIdle, k.PingTimeout)
}

// h2Client is a bare HTTP/2 gRPC client: it pings at any rate and can
// play dead, which grpc-go's client does not allow.
type h2Client struct {
	conn net.Conn
	wmu  sync.Mutex // one writer at a time on fr
	fr   *http2.Framer
	addr string

	answerPings atomic.Bool
	pingAcks    atomic.Int64
	serverPings atomic.Int64
	streamEnded atomic.Bool
	firstData   chan struct{}
	dataOnce    sync.Once
	goaways     atomic.Pointer[goAway]
	closed      chan struct{} // the read loop ended
	readErr     error         // why; set before closed is closed
}

func dialH2(t *testing.T, addr string) *h2Client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &h2Client{conn: conn, fr: http2.NewFramer(conn, conn), addr: addr, firstData: make(chan struct{}), closed: make(chan struct{})}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.answerPings.Store(true)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	c.write(func(fr *http2.Framer) error { return fr.WriteSettings() })
	go c.readLoop()
	t.Cleanup(func() { _ = conn.Close(); <-c.closed })
	return c
}

func (c *h2Client) write(f func(*http2.Framer) error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = f(c.fr) // a failed write shows up as a read error
}

func (c *h2Client) readLoop() {
	defer close(c.closed)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.readErr = err
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			switch {
			case f.IsAck():
				c.pingAcks.Add(1)
			default:
				c.serverPings.Add(1)
				if c.answerPings.Load() {
					c.write(func(fr *http2.Framer) error { return fr.WritePing(true, f.Data) })
				}
			}
		case *http2.GoAwayFrame:
			c.goaways.Store(&goAway{code: f.ErrCode, debug: string(f.DebugData())}) // DebugData is the framer's buffer
		case *http2.DataFrame:
			if n := uint32(len(f.Data())); n > 0 {
				c.write(func(fr *http2.Framer) error {
					if err := fr.WriteWindowUpdate(0, n); err != nil {
						return err
					}
					return fr.WriteWindowUpdate(f.StreamID, n)
				})
			}
			c.dataOnce.Do(func() { close(c.firstData) })
			if f.StreamEnded() {
				c.streamEnded.Store(true)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				c.streamEnded.Store(true)
			}
		case *http2.RSTStreamFrame:
			c.streamEnded.Store(true)
		}
	}
}

// watch opens WatchStatus on stream "default" as stream 1 and waits for
// its snapshot.
func (c *h2Client) watch(t *testing.T) {
	t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/confighub.v1.ConfigHubService/WatchStatus"},
		{":authority", c.addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	req, err := proto.Marshal(&confighubv1.WatchStatusRequest{Stream: "default"})
	if err != nil {
		t.Fatal(err)
	}
	msg := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(req))) // gRPC framing: uncompressed, length
	msg = append(msg, req...)
	c.write(func(fr *http2.Framer) error {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			return err
		}
		return fr.WriteData(1, true, msg)
	})
	select {
	case <-c.firstData:
	case <-c.closed:
		t.Fatalf("connection closed before the watch's snapshot: %v", c.readErr)
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot on the watch after 10 s")
	}
}

// pingFor pings every interval for total (the sleep is the cadence under
// test, not a synchronisation) and returns how many pings it sent; it
// stops early at a GOAWAY or when the connection closes.
func (c *h2Client) pingFor(interval, total time.Duration) int {
	n := 0
	for deadline := time.Now().Add(total); time.Now().Before(deadline); {
		if c.goAway() != nil {
			return n
		}
		select {
		case <-c.closed:
			return n
		case <-time.After(interval):
		}
		var data [8]byte
		binary.BigEndian.PutUint64(data[:], uint64(n))
		c.write(func(fr *http2.Framer) error { return fr.WritePing(false, data) })
		n++
	}
	return n
}

// goAway is a GOAWAY frame received.
type goAway struct {
	code  http2.ErrCode
	debug string
}

func (c *h2Client) goAway() *goAway { return c.goaways.Load() }

// err is why the connection closed, nil while it is open.
func (c *h2Client) err() error {
	select {
	case <-c.closed:
		return c.readErr
	default:
		return nil
	}
}

func (c *h2Client) awaitPingAcks(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.pingAcks.Load() < int64(n); {
		if time.Now().After(deadline) {
			t.Errorf("%d of %d pings acknowledged", c.pingAcks.Load(), n)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
