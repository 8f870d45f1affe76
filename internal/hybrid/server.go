package hybrid

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// Kind is the sink kind of a connected data plane.
const Kind = "kong-dp"

// Mode is how data planes' client certificates are checked (kong.conf
// cluster_mtls).
type Mode string

const (
	// ModeShared: the client certificate is the cluster certificate itself
	// (its SHA-256 digest equals the hub's; kong/clustering/tls.lua).
	ModeShared Mode = "shared"
	// ModePKI: the client certificate is verified against the cluster CA.
	ModePKI Mode = "pki"
)

// Defaults, Kong's where Kong has one.
const (
	// DefaultMaxPayload is kong.conf's cluster_max_payload: the largest
	// compressed frame either end takes.
	DefaultMaxPayload = 16 << 20
	// DefaultPingTimeout: a data plane pings every 30 s; Kong's control
	// plane closes one silent for 1.5 times that (control_plane.lua
	// PING_WAIT).
	DefaultPingTimeout = 45 * time.Second
	// DefaultApplyBound: a data plane pings right after it loaded a
	// configuration, else every 30 s; one that still pings another hash
	// this long after the send did not load it.
	DefaultApplyBound = 60 * time.Second
	// DefaultPurgeDelay is kong.conf's cluster_data_plane_purge_delay.
	DefaultPurgeDelay = 14 * 24 * time.Hour
	// writeTimeout bounds a frame's write when the apply has no deadline.
	writeTimeout = 30 * time.Second
)

// Options configure the cluster listener.
type Options struct {
	// Cert is the hub's cluster certificate (shared mode: the one every
	// data plane presents too).
	Cert tls.Certificate
	Mode Mode
	// ClientCAs verify data planes' certificates in pki mode.
	ClientCAs  *x509.CertPool
	MaxPayload int
	Target     Version
	// PingTimeout closes a data plane silent for that long; ApplyBound is
	// how long a data plane may go on pinging another hash after a send;
	// PurgeDelay forgets a data plane disconnected for that long.
	PingTimeout, ApplyBound, PurgeDelay time.Duration
	Logger                              *slog.Logger
	Clock                               clockwork.Clock
}

// Sinks is where the listener puts data planes' sinks: the engine, or on
// replicas the cluster (cluster.Replica, which claims a data plane for
// the replica it connected to). A sink is put at every connection and
// deleted when it is purged.
type Sinks interface {
	PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error)
	DeleteSink(name string) error
	Sink(name string) *confighubv1.Sink
}

// Server is the cluster listener: Kong data planes in hybrid mode dial it,
// and each is a kong-dp sink. See the package doc.
type Server struct {
	opts       Options
	log        *slog.Logger
	clock      clockwork.Clock
	frames     *frames
	tls        *tls.Config
	handshakes *handshakes
	up         websocket.Upgrader
	upV2       websocket.Upgrader

	mu    sync.Mutex
	nodes map[string]*dataPlane
	// plugins are the plugin sets data planes reported, shared by every
	// data plane with the same one (a fleet runs a handful).
	plugins map[string]map[string]string
	sinks   Sinks
	http    *http.Server
	conns   sync.WaitGroup
	open    map[*session]struct{}
	done    bool
}

// New checks opts and returns a listener not yet serving.
func New(opts Options) (*Server, error) {
	if len(opts.Cert.Certificate) == 0 {
		return nil, errors.New("hybrid: a cluster certificate is required")
	}
	if opts.Mode == "" {
		opts.Mode = ModeShared
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if opts.Target == (Version{}) {
		opts.Target = DefaultTarget
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.PingTimeout, DefaultPingTimeout}, {&opts.ApplyBound, DefaultApplyBound}, {&opts.PurgeDelay, DefaultPurgeDelay}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	hs := &handshakes{slots: make(chan struct{}, handshakesPerCPU*runtime.GOMAXPROCS(0))}
	tc := &tls.Config{
		Certificates:       []tls.Certificate{opts.Cert},
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"http/1.1"},
		GetConfigForClient: hs.admit,
	}
	switch opts.Mode {
	case ModeShared:
		want := sha256.Sum256(opts.Cert.Certificate[0])
		tc.ClientAuth = tls.RequireAnyClientCert
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != want {
				return errors.New("the client certificate is not the cluster certificate (cluster_mtls shared)")
			}
			return nil
		}
	case ModePKI:
		if opts.ClientCAs == nil {
			return nil, errors.New("hybrid: pki mode needs the cluster CA certificate")
		}
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		tc.ClientCAs = opts.ClientCAs
	default:
		return nil, fmt.Errorf("hybrid: mtls mode %q: want shared or pki", opts.Mode)
	}
	s := &Server{
		handshakes: hs,
		opts:       opts,
		log:        opts.Logger,
		clock:      opts.Clock,
		frames:     newFrames(opts.MaxPayload, opts.Logger),
		tls:        tc,
		nodes:      map[string]*dataPlane{},
		plugins:    map[string]map[string]string{},
		open:       map[*session]struct{}{},
	}
	// No subprotocol and no compression extension on /v1/outlet: a data
	// plane's websocket client refuses RSV bits and fragments
	// (lua-resty-websocket protocol.lua recv_frame). A data plane sends
	// pings of 32 bytes: a small read buffer. The write buffer is only
	// taken during a write (reconfigure frames are prepared).
	pool := &sync.Pool{}
	s.up = websocket.Upgrader{ReadBufferSize: 256, WriteBufferSize: 1024, WriteBufferPool: pool, CheckOrigin: anyOrigin}
	s.upV2 = websocket.Upgrader{ReadBufferSize: 256, WriteBufferSize: 1024, WriteBufferPool: pool, CheckOrigin: anyOrigin, Subprotocols: []string{rpcSubprotocol}}
	return s, nil
}

// Data planes send no Origin; a browser has no business here either way
// (the client certificate is required).
func anyOrigin(*http.Request) bool { return true }

// Register adds the kong-dp kind to reg. Its factory hands the engine the
// sink of a data plane; one that is not connected here (a sink put by
// hand, or taken over from a replica that died) shows disconnected until
// it connects, and is purged after the purge delay.
func (s *Server) Register(reg *sink.Registry) error {
	return reg.Register(Kind, func(spec *confighubv1.Sink, _ sink.Deps) (sink.Sink, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		d := s.nodes[spec.GetName()]
		if d == nil {
			d = newDataPlane(s, spec.GetName())
			d.disconnected = s.clock.Now()
			d.schedulePurgeLocked()
			s.nodes[d.name] = d
		}
		d.refs++
		return d, nil
	}, sink.AsGateway(), sink.WithDefaults(&confighubv1.SinkOptions{Timeout: durationOf(DefaultApplyBound + DefaultPingTimeout)}))
}

// Serve accepts data planes on lis (plain TCP: Serve runs TLS) until Close.
func (s *Server) Serve(lis net.Listener, sinks Sinks) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/outlet", s.outlet)
	mux.HandleFunc("GET /v2/outlet", s.outletV2)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// HTTP/1.1 only: an OpenResty data plane sends no ALPN.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		// A refused handshake (no certificate, the wrong one) is logged
		// with the address it came from.
		ErrorLog:  slog.NewLogLogger(s.log.With("listener", "cluster").Handler(), slog.LevelWarn),
		ConnState: s.handshakes.done,
	}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.sinks, s.http = sinks, hs
	s.mu.Unlock()
	err := hs.Serve(tls.NewListener(lis, s.tls))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// handshakes bounds the TLS handshakes in flight, so that thousands of
// data planes redialling at once get handshakes the CPU finishes within
// their 5 s timeout (kong/clustering/utils.lua) instead of all started and
// few finished, each holding its memory. A connection waits for a slot
// after its ClientHello (GetConfigForClient), before the costly steps; one
// that waited handshakeWait is refused (its data plane gives up soon and
// redials). The slot is freed at the connection's next state (ConnState).
type handshakes struct {
	slots chan struct{}
	held  sync.Map // the raw connections holding a slot
}

const (
	handshakesPerCPU = 64
	handshakeWait    = 3 * time.Second
)

func (h *handshakes) admit(hi *tls.ClientHelloInfo) (*tls.Config, error) {
	t := time.NewTimer(handshakeWait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		h.held.Store(hi.Conn, nil)
		return nil, nil
	case <-t.C:
		return nil, errors.New("too many TLS handshakes in flight; the data plane redials")
	case <-hi.Context().Done():
		return nil, hi.Context().Err()
	}
}

func (h *handshakes) done(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok && st != http.StateNew {
		if _, ok := h.held.LoadAndDelete(tc.NetConn()); ok {
			<-h.slots
		}
	}
}

// Close stops accepting, closes every data plane's connection and waits
// for their goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.done = true
	hs := s.http
	for ss := range s.open {
		ss.close()
	}
	nodes := make([]*dataPlane, 0, len(s.nodes))
	for _, d := range s.nodes {
		nodes = append(nodes, d)
	}
	s.mu.Unlock()
	if hs != nil {
		_ = hs.Close()
	}
	s.conns.Wait()
	for _, d := range nodes {
		d.mu.Lock()
		if d.purge != nil {
			d.purge.Stop()
		}
		d.mu.Unlock()
	}
}

// hello is what a data plane tells when it connects: the query parameters
// and its basic_info frame.
type hello struct {
	nodeID, hostname, version string
	Type                      string            `json:"type"`
	Plugins                   json.RawMessage   `json:"plugins"`
	Labels                    map[string]string `json:"labels"`
	// refusal is why the hub would not serve the data plane.
	refusal error
}

type pluginVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// refuse answers a request that is not a data plane's with status and logs
// it with its address.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	s.log.Warn("data plane refused", "addr", r.RemoteAddr, "status", status, "reason", why)
	http.Error(w, why, status)
}

// outlet serves /v1/outlet: kong/clustering/control_plane.lua's
// handle_cp_websocket.
func (s *Server) outlet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	h := hello{nodeID: q.Get("node_id"), hostname: q.Get("node_hostname"), version: q.Get("node_version")}
	if h.nodeID == "" {
		s.refuse(w, r, http.StatusBadRequest, "node_id is required")
		return
	}
	if h.version == "" {
		s.refuse(w, r, http.StatusBadRequest, "node_version is required")
		return
	}
	if !validName(h.nodeID) {
		s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("node_id %q is not a sink name (A-Z, a-z, 0-9, '.', '_', '-', at most 128)", h.nodeID))
		return
	}
	if cur := s.sinkSpec(h.nodeID); cur != nil && cur.GetKind() != Kind {
		s.refuse(w, r, http.StatusConflict, fmt.Sprintf("node_id %q is the name of a %s sink", h.nodeID, cur.GetKind()))
		return
	}
	conn, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		s.log.Warn("data plane refused", "addr", r.RemoteAddr, "node_id", h.nodeID, "reason", err.Error())
		return // Upgrade answered
	}
	addr := r.RemoteAddr
	ss := s.track(conn)
	if ss == nil {
		return
	}
	d := s.admit(ss, h, addr)
	if d == nil {
		s.untrack(ss)
		return
	}
	// The read loop runs in a goroutine of its own: the handler's return
	// frees what net/http keeps per connection (its buffers, the request)
	// and the stack that the TLS handshake and the hello grew.
	go func() {
		defer s.untrack(ss)
		s.readLoop(ss, d, addr)
	}()
}

func (s *Server) sinkSpec(name string) *confighubv1.Sink {
	s.mu.Lock()
	sinks := s.sinks
	s.mu.Unlock()
	if sinks == nil {
		return nil
	}
	return sinks.Sink(name)
}

// track makes conn a session Close ends (nil after Close).
func (s *Server) track(conn *websocket.Conn) *session {
	ss := &session{conn: conn, closed: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		ss.close()
		return nil
	}
	s.open[ss] = struct{}{}
	s.conns.Add(1)
	return ss
}

func (s *Server) untrack(ss *session) {
	ss.close()
	s.mu.Lock()
	delete(s.open, ss)
	s.mu.Unlock()
	s.conns.Done()
}

// closeWith sends a close frame and drops the connection.
func closeWith(ss *session, code int, text string) {
	_ = ss.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	ss.close()
}

// admit reads the data plane's basic_info, checks its version and puts its
// sink; nil when the data plane is refused (the connection is closed).
func (s *Server) admit(ss *session, h hello, addr string) *dataPlane {
	conn := ss.conn
	conn.SetReadLimit(int64(s.opts.MaxPayload))
	_ = conn.SetReadDeadline(time.Now().Add(s.opts.PingTimeout))
	log := s.log.With("addr", addr, "node_id", h.nodeID)
	typ, data, err := conn.ReadMessage()
	if err != nil {
		log.Warn("data plane refused", "reason", "reading basic_info: "+err.Error())
		code := websocket.CloseProtocolError
		if errors.Is(err, websocket.ErrReadLimit) {
			code = websocket.CloseMessageTooBig
		}
		closeWith(ss, code, "basic_info")
		return nil
	}
	if typ != websocket.BinaryMessage {
		log.Warn("data plane refused", "reason", "the first frame is not a binary basic_info frame")
		closeWith(ss, websocket.CloseUnsupportedData, "basic_info must be a binary frame")
		return nil
	}
	// plugins must be a Lua table (control_plane.lua): a list, or {} where
	// cjson encodes a data plane's empty one (plugins = off).
	var plugins []pluginVersion
	if err := json.Unmarshal(data, &h); err != nil || h.Type != "basic_info" || len(h.Plugins) == 0 ||
		h.Plugins[0] != '[' && h.Plugins[0] != '{' || h.Plugins[0] == '[' && json.Unmarshal(h.Plugins, &plugins) != nil {
		log.Warn("data plane refused", "reason", "the first frame is not {\"type\":\"basic_info\",\"plugins\":[...]}")
		closeWith(ss, websocket.CloseUnsupportedData, "basic_info expected")
		return nil
	}
	ss.plugins = s.pluginSet(plugins)
	h.Plugins = nil
	stream := h.Labels["stream"]
	if stream == "" {
		stream = config.DefaultStream
	}
	if err := checkVersion(h.version, s.opts.Target); err != nil {
		h.refusal = err
		log.Warn("data plane refused", "reason", err.Error())
		if d, perr := s.attach(h, stream, addr, nil); perr != nil {
			log.Warn("data plane sink not put", "error", perr)
		} else {
			d.refused(h, addr)
		}
		closeWith(ss, websocket.ClosePolicyViolation, SyncKongVersionIncompatible)
		return nil
	}
	d, err := s.attach(h, stream, addr, ss)
	if err != nil {
		log.Warn("data plane refused", "reason", err.Error())
		closeWith(ss, websocket.CloseInternalServerErr, "sink not put")
		return nil
	}
	log.Info("data plane connected", "hostname", h.hostname, "version", h.version, "stream", stream)
	return d
}

// readLoop serves a data plane's connection until it ends: pings (each
// answered) and error frames.
func (s *Server) readLoop(ss *session, d *dataPlane, addr string) {
	conn := ss.conn
	defer func() {
		d.disconnect(ss)
		s.log.Info("data plane disconnected", "addr", addr, "node_id", d.name)
	}()
	conn.SetPingHandler(func(p string) error {
		if len(p) != 32 {
			return fmt.Errorf("a ping of %d bytes: a data plane's ping carries its 32-character config hash", len(p))
		}
		_ = conn.SetReadDeadline(time.Now().Add(s.opts.PingTimeout))
		d.ping(ss, p)
		// Every ping is answered (control_plane.lua queues an empty PONG).
		_ = conn.WriteControl(websocket.PongMessage, nil, time.Now().Add(writeTimeout))
		return nil
	})
	for {
		typ, data, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("data plane connection ended", "addr", addr, "node_id", d.name, "error", err)
			}
			return
		}
		var ef errorFrame
		if typ != websocket.BinaryMessage || json.Unmarshal(data, &ef) != nil || ef.Type != "error" {
			// Kong's control plane: "dps only send pings" (and error
			// frames, in Konnect mode).
			s.log.Warn("data plane closed", "addr", addr, "node_id", d.name, "reason", "a frame that is neither a ping nor an error frame")
			closeWith(ss, websocket.CloseUnsupportedData, "data planes only send pings")
			return
		}
		d.reportError(ss, ef.Error)
	}
}

// pluginSet is the shared map of a basic_info's plugins (name -> version).
func (s *Server) pluginSet(ps []pluginVersion) map[string]string {
	var key strings.Builder
	for _, p := range ps {
		key.WriteString(p.Name)
		key.WriteByte('@')
		key.WriteString(p.Version)
		key.WriteByte(',')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.plugins[key.String()]; ok {
		return m
	}
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.Name] = p.Version
	}
	if len(s.plugins) < 1024 {
		s.plugins[key.String()] = m
	}
	return m
}

// attach makes ss (when not nil) the data plane's connection and puts its
// sink (on replicas: claims it here). It fails when the engine does not
// run the sink here.
func (s *Server) attach(h hello, stream, addr string, ss *session) (*dataPlane, error) {
	s.mu.Lock()
	d := s.nodes[h.nodeID]
	if d == nil {
		d = newDataPlane(s, h.nodeID)
		s.nodes[h.nodeID] = d
	}
	if ss != nil {
		d.connect(ss, h, addr)
	}
	sinks := s.sinks
	s.mu.Unlock()
	_, _, err := sinks.PutSink(&confighubv1.Sink{Name: h.nodeID, Kind: Kind, Stream: stream})
	if s.drop(d) && err == nil {
		err = errors.New("its sink runs on another replica")
	}
	return d, err
}

// drop forgets d unless a sink of the engine holds it (it was deleted, or
// runs on another replica): its connection closes, and the data plane's
// next one makes a new dataPlane. It reports whether d is forgotten.
func (s *Server) drop(d *dataPlane) bool {
	s.mu.Lock()
	if d.refs > 0 {
		s.mu.Unlock()
		return false
	}
	if s.nodes[d.name] == d {
		delete(s.nodes, d.name)
	}
	s.mu.Unlock()
	d.mu.Lock()
	if d.purge != nil {
		d.purge.Stop()
		d.purge = nil
	}
	sess := d.sess
	d.mu.Unlock()
	if sess != nil {
		sess.close()
	}
	return true
}

// purge deletes the sink of a data plane disconnected for the purge delay
// (on replicas, the one that runs it: once).
func (s *Server) purge(d *dataPlane) {
	if !d.expired() {
		return
	}
	s.mu.Lock()
	sinks := s.sinks
	s.mu.Unlock()
	if err := sinks.DeleteSink(d.name); err != nil {
		s.log.Warn("purging a data plane's sink failed", "sink", d.name, "error", err)
		return
	}
	s.log.Info("data plane purged", "sink", d.name, "after", s.opts.PurgeDelay)
}

// write sends f on ss's connection, one unfragmented binary frame shared by
// every data plane of the stream.
func (s *Server) write(ss *session, f *frame, deadline time.Time) error {
	if err := ss.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	return ss.conn.WritePreparedMessage(f.pm)
}

// validName is the sink name rule (api/confighub/v1/rules.proto sink_name).
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
