package hybrid_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/kongemu/dataplane"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests run the hub's listener and engine against the data plane
// emulator (test/kongemu/dataplane): no real Kong data plane runs here.

type hub struct {
	t    *testing.T
	eng  *engine.Engine
	srv  *hybrid.Server
	addr string
	cert tls.Certificate
	logs *logBuffer
	gen  uint64
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func clusterCert(t *testing.T) tls.Certificate {
	t.Helper()
	c, k, err := hybrid.GenerateClusterCert(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func startHub(t *testing.T, o hybrid.Options, engOpts ...engine.Option) *hub {
	t.Helper()
	if len(o.Cert.Certificate) == 0 {
		o.Cert = clusterCert(t)
	}
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	srv, err := hybrid.New(o)
	if err != nil {
		t.Fatal(err)
	}
	reg := sink.NewRegistry()
	if err := srv.Register(reg); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(reg, append(engOpts, engine.WithStatusDispatchWindow(0))...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis, eng) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		eng.Stop()
	})
	return &hub{t: t, eng: eng, srv: srv, addr: lis.Addr().String(), cert: o.Cert, logs: logs}
}

// push publishes raw as the stream's next generation.
func (h *hub) push(stream, raw string) *config.Config {
	h.gen++
	cfg := config.New(stream, h.gen, config.Hash([]byte(raw)), config.FormatJSON, []byte(raw), nil, nil, time.Now())
	h.eng.Publish(cfg)
	return cfg
}

func (h *hub) dp(o dataplane.Options) *dataplane.DP {
	h.t.Helper()
	o.Addr = h.addr
	if len(o.Cert.Certificate) == 0 {
		o.Cert = h.cert
	}
	if o.ReconnectMin == 0 {
		o.ReconnectMin, o.ReconnectMax = 50*time.Millisecond, 100*time.Millisecond
	}
	d := dataplane.Start(o)
	h.t.Cleanup(d.Stop)
	return d
}

// status waits until the sink's status satisfies ok, and returns it.
func (h *hub) status(name string, ok func(*confighubv1.SinkStatus) bool) *confighubv1.SinkStatus {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last *confighubv1.SinkStatus
	for time.Now().Before(deadline) {
		for _, stream := range []string{"default", "edge"} {
			st, _ := h.eng.View().Snapshot(stream)
			for _, s := range st.GetSinks() {
				if s.GetSink() == name {
					last = s
					if ok(s) {
						return s
					}
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("sink %s: status never as wanted; last %v\nlogs:\n%s", name, last, h.logs.String())
	return nil
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

const svc = `{"_format_version":"3.0","services":[{"name":"echo","host":"echo.local","routes":[{"name":"r","paths":["/"]}]}]}`

func applied(cfg *config.Config) func(*confighubv1.SinkStatus) bool {
	return func(s *confighubv1.SinkStatus) bool {
		return s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED && s.GetAppliedGeneration() == cfg.Generation
	}
}

func TestHappyPath(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	cfg := h.push("default", svc)
	a := h.dp(dataplane.Options{NodeID: "dp-a", Hostname: "host-a", Version: "3.9.1"})
	b := h.dp(dataplane.Options{NodeID: "dp-b", Labels: map[string]string{"zone": "z1"}})
	edge := h.dp(dataplane.Options{NodeID: "dp-edge", Labels: map[string]string{"stream": "edge"}})
	want := hybrid.ConfigHash(cfg)
	for _, d := range []*dataplane.DP{a, b} {
		if err := d.WaitHash(ctx(t), want); err != nil {
			t.Fatal(err)
		}
	}
	st := h.status("dp-a", applied(cfg))
	dp := st.GetDataPlane()
	if st.GetKind() != hybrid.Kind || dp.GetHostname() != "host-a" || dp.GetVersion() != "3.9.1" || !dp.GetConnected() ||
		dp.GetSyncStatus() != hybrid.SyncNormal || dp.GetConnectedSince() == nil || !strings.HasPrefix(dp.GetAddress(), "127.0.0.1:") {
		t.Fatalf("dp-a status: %v", st)
	}
	h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return s.GetDataPlane().GetConfigHash() == want })
	h.status("dp-b", func(s *confighubv1.SinkStatus) bool { return s.GetDataPlane().GetLabels()["zone"] == "z1" })
	if edge.Hash() != dataplane.EmptyHash {
		t.Fatalf("the edge data plane runs %s: it reads another stream", edge.Hash())
	}
	edgeCfg := h.push("edge", `{"_format_version":"3.0","services":[{"name":"edge","host":"edge.local"}]}`)
	if err := edge.WaitHash(ctx(t), hybrid.ConfigHash(edgeCfg)); err != nil {
		t.Fatal(err)
	}
	h.status("dp-edge", applied(edgeCfg))

	// A second generation: one compression for its stream, whatever the
	// number of data planes.
	runs0 := h.srv.Compressions()
	cfg2 := h.push("default", strings.Replace(svc, "echo.local", "echo2.local", 1))
	for _, d := range []*dataplane.DP{a, b} {
		if err := d.WaitHash(ctx(t), hybrid.ConfigHash(cfg2)); err != nil {
			t.Fatal(err)
		}
	}
	h.status("dp-b", applied(cfg2))
	if runs := h.srv.Compressions(); runs != runs0+1 {
		t.Fatalf("compressions for one generation sent to 2 data planes: %d, want 1", runs-runs0)
	}
	if got := h.eng.ListSinks("default"); len(got) != 2 || got[0].GetKind() != hybrid.Kind {
		t.Fatalf("ListSinks: %v", got)
	}
}

func TestEmptyConfigIsReportedAsZeros(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	d := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := d.WaitConnects(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	cfg := h.push("default", `{"_format_version":"3.0","services":[]}`)
	h.status("dp-a", applied(cfg))
	if d.Hash() != dataplane.EmptyHash {
		t.Fatalf("hash %s", d.Hash())
	}
}

// dial connects by hand: a bad data plane the emulator would not be.
func (h *hub) dial(query string, cert *tls.Certificate) (*websocket.Conn, *http.Response, error) {
	tc := &tls.Config{InsecureSkipVerify: true, ServerName: "kong_clustering"}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	d := websocket.Dialer{TLSClientConfig: tc, HandshakeTimeout: 5 * time.Second, WriteBufferSize: 256 << 10}
	return d.Dial("wss://"+h.addr+"/v1/outlet?"+query, nil)
}

// closed reads until the hub closes the connection.
func closed(t *testing.T, c *websocket.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the hub kept the connection open")
			}
			return
		}
	}
}

func TestRefusals(t *testing.T) {
	h := startHub(t, hybrid.Options{MaxPayload: 64 << 10})
	q := "node_id=dp-x&node_hostname=x&node_version=3.9.0"
	t.Run("no certificate", func(t *testing.T) {
		if _, _, err := h.dial(q, nil); err == nil {
			t.Fatal("connected without a client certificate")
		}
	})
	t.Run("wrong certificate", func(t *testing.T) {
		other := clusterCert(t)
		if _, _, err := h.dial(q, &other); err == nil {
			t.Fatal("connected with another certificate")
		}
	})
	for _, tc := range []struct{ name, query, want string }{
		{"no node_id", "node_hostname=x&node_version=3.9.0", "node_id is required"},
		{"no node_version", "node_id=dp-x&node_hostname=x", "node_version is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := h.dial(tc.query, &h.cert)
			if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("err %v, resp %v: want 400", err, resp)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		typ   int
		frame []byte
	}{
		{"a text frame first", websocket.TextMessage, []byte(`{"type":"basic_info","plugins":[]}`)},
		{"another type first", websocket.BinaryMessage, []byte(`{"type":"reconfigure","plugins":[]}`)},
		{"plugins not a list", websocket.BinaryMessage, []byte(`{"type":"basic_info","plugins":"acl"}`)},
		{"not JSON", websocket.BinaryMessage, []byte(`basic_info`)},
		{"an oversized basic_info", websocket.BinaryMessage, []byte(`{"type":"basic_info","plugins":[],"process_conf":{"x":"` + strings.Repeat("a", 100<<10) + `"}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := h.dial(q, &h.cert)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// The hub may close an oversized frame's connection while it
			// is being written.
			if err := c.WriteMessage(tc.typ, tc.frame); err == nil {
				closed(t, c)
			}
		})
	}
	// The listener's goroutines log the handshake errors after the
	// client saw them.
	deadline := time.Now().Add(5 * time.Second)
	for _, want := range []string{"node_id is required", "node_version is required", "not a binary basic_info frame", `the first frame is not {\"type\":\"basic_info\"`, "reading basic_info", "TLS handshake error from 127.0.0.1:"} {
		for !strings.Contains(h.logs.String(), want) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, h.logs.String())
		}
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "addr=127.0.0.1:") {
		t.Errorf("refusals are not logged with the address:\n%s", logs)
	}
}

func TestVersionCompatibility(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	cfg := h.push("default", svc)
	older := h.dp(dataplane.Options{NodeID: "dp-older", Version: "3.8.0"})
	if err := older.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"3.10.0", "4.0.0", "2.8.1"} {
		name := "dp-" + strings.ReplaceAll(v, ".", "-")
		h.dp(dataplane.Options{NodeID: name, Version: v})
		st := h.status(name, func(s *confighubv1.SinkStatus) bool {
			return s.GetDataPlane().GetSyncStatus() == hybrid.SyncKongVersionIncompatible
		})
		if st.GetDataPlane().GetConnected() || !strings.Contains(st.GetLastError(), "kong_version_incompatible") {
			t.Fatalf("%s: %v", v, st)
		}
	}
}

func TestMissingPluginIsNotSent(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	lacks := h.dp(dataplane.Options{NodeID: "dp-lacks", Without: []string{"rate-limiting", "cors"}})
	has := h.dp(dataplane.Options{NodeID: "dp-has"})
	// plugins = off: basic_info's plugins is {}, cjson's empty table.
	none := h.dp(dataplane.Options{NodeID: "dp-none", Plugins: []string{}})
	for _, d := range []*dataplane.DP{lacks, has, none} {
		if err := d.WaitConnects(ctx(t), 1); err != nil {
			t.Fatal(err)
		}
	}
	cfg := h.push("default", `{"_format_version":"3.0","services":[{"name":"s","host":"h","plugins":[{"name":"cors"}]}],"plugins":[{"name":"rate-limiting","config":{"minute":5}}]}`)
	if err := has.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*dataplane.DP{lacks, none} {
		st := h.status(d.Query().Get("node_id"), func(s *confighubv1.SinkStatus) bool { return s.GetState() == confighubv1.SinkState_SINK_STATE_FAILED })
		if st.GetLastErrorCode() != string(sink.CodeInvalid) || !strings.Contains(st.GetLastError(), "cors, rate-limiting") ||
			st.GetDataPlane().GetSyncStatus() != hybrid.SyncPluginSetIncompatible || !st.GetDataPlane().GetConnected() {
			t.Fatalf("status: %v", st)
		}
		if d.Hash() != dataplane.EmptyHash || d.Stats().Refusals != 0 {
			t.Fatalf("the data plane was sent the generation: %s %+v", d.Hash(), d.Stats())
		}
	}
}

func incompressible(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func TestPayloadOverTheLimit(t *testing.T) {
	h := startHub(t, hybrid.Options{MaxPayload: 32 << 10})
	d := h.dp(dataplane.Options{NodeID: "dp-a", MaxPayload: 32 << 10})
	if err := d.WaitConnects(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	h.push("default", `{"_format_version":"3.0","services":[{"name":"s","host":"h","tags":["`+incompressible(64<<10)+`"]}]}`)
	st := h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return s.GetState() == confighubv1.SinkState_SINK_STATE_FAILED })
	if st.GetLastErrorCode() != string(sink.CodeTooLarge) || !strings.Contains(st.GetLastError(), "over the cluster max payload of 32768 bytes") {
		t.Fatalf("status: %v", st)
	}
	if s := d.Stats(); s.Connects != 1 || !s.Connected {
		t.Fatalf("the data plane was sent the frame: %+v", s)
	}
}

func TestConfigTheDataPlaneDoesNotLoad(t *testing.T) {
	h := startHub(t, hybrid.Options{ApplyBound: 300 * time.Millisecond})
	d := h.dp(dataplane.Options{NodeID: "dp-a", PingInterval: 100 * time.Millisecond})
	good := h.push("default", svc)
	if err := d.WaitHash(ctx(t), hybrid.ConfigHash(good)); err != nil {
		t.Fatal(err)
	}
	bad := h.push("default", `{"_format_version":"3.0","services":[{"name":"s","host":"h","port":70000}]}`)
	st := h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return s.GetState() == confighubv1.SinkState_SINK_STATE_FAILED })
	want := fmt.Sprintf("the data plane did not load generation %d (hash %s); it still runs %s", bad.Generation, hybrid.ConfigHash(bad), hybrid.ConfigHash(good))
	if !strings.Contains(st.GetLastError(), want) || st.GetRejectedGeneration() != bad.Generation {
		t.Fatalf("status: %v\nwant %q", st, want)
	}
}

func TestErrorFramesBecomeEntityErrors(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	d := h.dp(dataplane.Options{NodeID: "dp-a", KonnectMode: true})
	if err := d.WaitConnects(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	bad := h.push("default", `{"_format_version":"3.0","services":[{"name":"s","host":"h","port":70000,"tags":["k8s-name:s"]}]}`)
	st := h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return s.GetState() == confighubv1.SinkState_SINK_STATE_FAILED })
	if st.GetLastErrorCode() != string(sink.CodeRejected) || st.GetRejectedGeneration() != bad.Generation || len(st.GetEntityErrors()) != 1 {
		t.Fatalf("status: %v", st)
	}
	ee := st.GetEntityErrors()[0]
	if ee.GetEntityType() != "service" || ee.GetEntityName() != "s" || len(ee.GetEntityTags()) != 1 || ee.GetEntityTags()[0] != "k8s-name:s" {
		t.Fatalf("entity error: %v", ee)
	}
}

func TestDisconnectReconnectAndPurge(t *testing.T) {
	clock := clockwork.NewFakeClock()
	h := startHub(t, hybrid.Options{Clock: clock, PurgeDelay: time.Hour})
	cfg := h.push("default", svc)
	d := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := d.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	h.status("dp-a", applied(cfg))
	d.Stop()
	st := h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return !s.GetDataPlane().GetConnected() })
	if st.GetLastErrorCode() != string(sink.CodeUnreachable) || st.GetDataPlane().GetDisconnectedSince() == nil {
		t.Fatalf("status: %v", st)
	}
	// Back before the purge delay: the same sink, at the current generation.
	clock.Advance(30 * time.Minute)
	again := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := again.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	h.status("dp-a", func(s *confighubv1.SinkStatus) bool {
		return s.GetDataPlane().GetConnected() && s.GetLastError() == "" && s.GetState() == confighubv1.SinkState_SINK_STATE_APPLIED
	})
	again.Stop()
	h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return !s.GetDataPlane().GetConnected() })
	if err := clock.BlockUntilContext(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for h.eng.HasSink("dp-a") {
		if time.Now().After(deadline) {
			t.Fatal("the data plane's sink was not purged")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSinkPutBeforeItsDataPlaneConnects: a kong-dp sink put by hand (or
// taken over from a replica that died) shows its data plane disconnected,
// and the data plane takes it when it connects.
func TestSinkPutBeforeItsDataPlaneConnects(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	cfg := h.push("default", svc)
	if _, _, err := h.eng.PutSink(&confighubv1.Sink{Name: "dp-a", Kind: hybrid.Kind}); err != nil {
		t.Fatal(err)
	}
	// The data plane's fields come with the sink; its worker then finds it unreachable.
	st := h.status("dp-a", func(s *confighubv1.SinkStatus) bool {
		return s.GetDataPlane() != nil && s.GetLastErrorCode() == string(sink.CodeUnreachable)
	})
	if st.GetDataPlane().GetConnected() || st.GetDataPlane().GetDisconnectedSince() == nil {
		t.Fatalf("status: %v", st)
	}
	d := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := d.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return applied(cfg)(s) && s.GetDataPlane().GetConnected() })
}

// placement is an engine.Ownership a test moves sinks with: here, or on
// replica "other".
type placement struct{ here atomic.Bool }

func (p *placement) OwnsSink(string) bool   { return p.here.Load() }
func (p *placement) OwnsStream(string) bool { return true }
func (p *placement) OwnerOf(string) string  { return "other" }

// TestDataPlaneRunElsewhereIsClosed: on replicas, a data plane whose sink
// is handed over to another replica (it connected there since) has its
// connection here closed, and one whose sink runs elsewhere is not served
// here; back here, it is served again.
func TestDataPlaneRunElsewhereIsClosed(t *testing.T) {
	own := &placement{}
	own.here.Store(true)
	h := startHub(t, hybrid.Options{}, engine.WithOwnership(own))
	cfg := h.push("default", svc)
	d := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := d.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	own.here.Store(false)
	h.eng.Reown()
	if err := d.WaitConnects(ctx(t), 3); err != nil {
		t.Fatal(err) // dropped, then refused again on each redial
	}
	if !strings.Contains(h.logs.String(), "its sink runs on another replica") {
		t.Fatalf("logs:\n%s", h.logs.String())
	}
	own.here.Store(true)
	h.eng.Reown()
	cfg2 := h.push("default", strings.Replace(svc, "echo.local", "echo2.local", 1))
	if err := d.WaitHash(ctx(t), hybrid.ConfigHash(cfg2)); err != nil {
		t.Fatal(err)
	}
}

// TestPurgeOnlyWhereTheSinkRuns: a data plane's sink handed over to
// another replica is not purged here (its owner purges it, once).
func TestPurgeOnlyWhereTheSinkRuns(t *testing.T) {
	clock := clockwork.NewFakeClock()
	own := &placement{}
	own.here.Store(true)
	h := startHub(t, hybrid.Options{Clock: clock, PurgeDelay: time.Hour}, engine.WithOwnership(own))
	d := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := d.WaitConnects(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	h.status("dp-a", func(s *confighubv1.SinkStatus) bool { return !s.GetDataPlane().GetConnected() })
	if err := clock.BlockUntilContext(ctx(t), 1); err != nil {
		t.Fatal(err) // the purge timer
	}
	own.here.Store(false)
	h.eng.Reown()
	if err := clock.BlockUntilContext(ctx(t), 0); err != nil {
		t.Fatal(err) // stopped by the hand-over
	}
	clock.Advance(2 * time.Hour)
	if !h.eng.HasSink("dp-a") {
		t.Fatal("a replica purged a data plane's sink it does not run")
	}
}

// stalled is a connection whose reads wait until it is closed: a client
// that sends its ClientHello and then goes quiet.
type stalled struct {
	net.Conn
	closed chan struct{}
}

func (c *stalled) Read([]byte) (int, error) { <-c.closed; return 0, net.ErrClosed }
func (c *stalled) Close() error             { close(c.closed); return c.Conn.Close() }

// TestHandshakesInFlightAreBounded: with every handshake slot taken, a
// connection is refused after waiting; a slot comes back when its
// connection ends, and the next data plane connects.
func TestHandshakesInFlightAreBounded(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	defer h.srv.HoldHandshakeSlots(1)()
	raw, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	st := &stalled{Conn: raw, closed: make(chan struct{})}
	go func() {
		_ = tls.Client(st, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{h.cert}}).Handshake()
	}()
	for deadline := time.Now().Add(5 * time.Second); h.srv.FreeHandshakeSlots() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stalled handshake took no slot")
		}
	}
	q := "node_id=dp-x&node_hostname=x&node_version=3.9.0"
	if _, _, err := h.dial(q, &h.cert); err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("with no slot free: %v, want the handshake refused", err)
	}
	_ = st.Close()
	d := h.dp(dataplane.Options{NodeID: "dp-a"})
	if err := d.WaitConnects(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.logs.String(), "too many TLS handshakes in flight") {
		t.Errorf("the refusal is not logged:\n%s", h.logs.String())
	}
}

func TestV2OutletAnswersHelloWithNoCapabilities(t *testing.T) {
	h := startHub(t, hybrid.Options{})
	tc := &tls.Config{InsecureSkipVerify: true, ServerName: "kong_clustering", Certificates: []tls.Certificate{h.cert}}
	dl := websocket.Dialer{TLSClientConfig: tc, Subprotocols: []string{"kong.meta.v1"}}
	c, resp, err := dl.Dial("wss://"+h.addr+"/v2/outlet", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp.Header.Get("Sec-WebSocket-Protocol") != "kong.meta.v1" {
		t.Fatalf("subprotocol %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	hello := `{"jsonrpc":"2.0","method":"kong.meta.v1.hello","params":[{"rpc_capabilities":["kong.sync.v2"],"rpc_frame_encodings":["x-snappy-framed"],"kong_version":"3.10.0"}],"id":1}`
	if err := c.WriteMessage(websocket.BinaryMessage, []byte(hello)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, msg, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Result struct {
			Caps     []string `json:"rpc_capabilities"`
			Encoding string   `json:"rpc_frame_encoding"`
		} `json:"result"`
		ID int `json:"id"`
	}
	if err := json.Unmarshal(msg, &got); err != nil || got.ID != 1 || got.Result.Caps == nil || len(got.Result.Caps) != 0 || got.Result.Encoding != "x-snappy-framed" {
		t.Fatalf("answer %s (%v)", msg, err)
	}
}
