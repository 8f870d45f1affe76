package dataplane

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/confighub/confighub/test/kongemu"
)

// EmptyHash is what a data plane pings before it has a configuration, and
// for one with no entity (kong/db/declarative DECLARATIVE_EMPTY_CONFIG_HASH).
const EmptyHash = kongemu.EmptyHash

// Kong's clustering constants (kong/constants.lua, data_plane.lua).
const (
	DefaultPingInterval = 30 * time.Second
	DefaultPingWait     = 45 * time.Second
	DefaultMaxPayload   = 16 << 20
)

// Options describe one emulated data plane (the kong.conf settings of a
// node with role = data_plane).
type Options struct {
	// Addr is cluster_control_plane (host:port).
	Addr string
	// Cert is cluster_cert/cluster_cert_key. In shared mode it is also
	// the only certificate the node trusts.
	Cert tls.Certificate
	// PKI is cluster_mtls = pki: the hub's certificate is verified
	// against RootCAs (cluster_ca_cert) for ServerName
	// (cluster_server_name, else the host of Addr).
	PKI        bool
	RootCAs    *x509.CertPool
	ServerName string

	NodeID, Hostname, Version string
	// Labels is cluster_dp_labels.
	Labels map[string]string
	// Plugins the node has (default: Kong's bundled plugins); Without
	// takes some away.
	Plugins []string
	Without []string
	// MaxPayload is cluster_max_payload.
	MaxPayload int
	// PingInterval and PingWait: 30 s and 45 s in Kong.
	PingInterval, PingWait time.Duration
	// ReconnectMin..ReconnectMax: Kong waits math.random(5, 10) s.
	ReconnectMin, ReconnectMax time.Duration
	// KonnectMode sends an error frame for a configuration that fails.
	KonnectMode bool
	// Shared checks each distinct frame once for every node using it.
	Shared *Shared
	Logger *slog.Logger
}

// Shared is what many emulated nodes in one process share: a frame's
// decoding and check, keyed by the frame's digest.
type Shared struct {
	mu     sync.Mutex
	cache  kongemu.Cache
	frames map[[32]byte]*decoded
	order  [][32]byte
}

// NewShared returns an empty Shared.
func NewShared() *Shared { return &Shared{frames: map[[32]byte]*decoded{}} }

type decoded struct {
	once  sync.Once
	msg   reconfigure
	table []byte
	// plugins are the plugin names table configures, sorted, unique.
	plugins []string
	res     kongemu.Result
	err     error
}

type reconfigure struct {
	Type        string          `json:"type"`
	ConfigTable json.RawMessage `json:"config_table"`
	ConfigHash  *string         `json:"config_hash"`
	Hashes      json.RawMessage `json:"hashes"`
}

// DP is one emulated data plane. It dials until Stop:
//   - wss://ADDR/v1/outlet?node_id=&node_hostname=&node_version= (not
//     URL-encoded), the node's certificate, no subprotocol or extension;
//     shared mode trusts only that certificate (name kong_clustering), pki
//     the cluster CA for cluster_server_name;
//   - one binary basic_info: plugins sorted with versions, labels,
//     process_conf, filters;
//   - a binary frame is gunzip'd and JSON-decoded (a failure ends the
//     connection); reconfigure queues config_table, latest wins; it goes
//     through kongemu's declarative check, a plugin the node lacks refused;
//   - a loaded config_hash is what pings carry (32 zeros before and for an
//     empty configuration; no check or reload when it is the running one);
//     a ping every 30 s and right after each configuration loaded;
//   - a failed configuration keeps the running one; in Konnect mode it is
//     reported in an error frame with flattened_errors;
//   - any frame but close counts as seen, pings are not answered; no
//     frame for 45 s ends the connection; redial after 5 to 10 s.
type DP struct {
	o       Options
	log     *slog.Logger
	plugins map[string]bool
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	mu                               sync.Mutex
	hash                             string
	conn                             *websocket.Conn
	connects, reconfigures, refusals int
	lastErr                          error
	changed                          chan struct{}
}

// Start starts the node's connection loop (data_plane.lua communicate).
func Start(o Options) *DP {
	if o.MaxPayload <= 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PingWait <= 0 {
		o.PingWait = DefaultPingWait
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin, o.ReconnectMax = 5*time.Second, 10*time.Second
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = o.ReconnectMin
	}
	if o.Version == "" {
		o.Version = "3.9.1"
	}
	if o.Hostname == "" {
		o.Hostname = o.NodeID
	}
	if o.Plugins == nil {
		o.Plugins = kongemu.BundledPlugins()
	}
	if o.Shared == nil {
		o.Shared = NewShared()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &DP{o: o, log: o.Logger.With("node_id", o.NodeID), plugins: map[string]bool{}, hash: EmptyHash, done: make(chan struct{}), changed: make(chan struct{})}
	for _, p := range o.Plugins {
		d.plugins[p] = true
	}
	for _, p := range o.Without {
		delete(d.plugins, p)
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	go d.loop()
	return d
}

// Stop closes the connection and ends the loop.
func (d *DP) Stop() {
	d.cancel()
	<-d.done
}

// Hash is the configuration hash the node runs (what its pings carry).
func (d *DP) Hash() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hash
}

// Stats are counters of the node's life.
type Stats struct {
	// Connects: connections that sent basic_info; Reconfigures:
	// configurations loaded; Refusals: configurations that failed.
	Connects, Reconfigures, Refusals int
	Connected                        bool
	// LastErr is why the last connection ended.
	LastErr error
}

// Stats returns the node's counters.
func (d *DP) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{Connects: d.connects, Reconfigures: d.reconfigures, Refusals: d.refusals, Connected: d.conn != nil, LastErr: d.lastErr}
}

// WaitHash waits until the node runs hash.
func (d *DP) WaitHash(ctx context.Context, hash string) error {
	return d.wait(ctx, func() bool { return d.hash == hash })
}

// WaitConnects waits until the node connected n times.
func (d *DP) WaitConnects(ctx context.Context, n int) error {
	return d.wait(ctx, func() bool { return d.connects >= n })
}

// WaitRefusals waits until n configurations failed on the node.
func (d *DP) WaitRefusals(ctx context.Context, n int) error {
	return d.wait(ctx, func() bool { return d.refusals >= n })
}

func (d *DP) wait(ctx context.Context, ok func() bool) error {
	for {
		d.mu.Lock()
		ch, done := d.changed, ok()
		d.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("data plane %s: %w", d.o.NodeID, ctx.Err())
		}
	}
}

func (d *DP) update(f func()) {
	d.mu.Lock()
	f()
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

func (d *DP) loop() {
	defer close(d.done)
	for {
		err := d.communicate()
		d.update(func() { d.conn, d.lastErr = nil, err })
		if d.ctx.Err() != nil {
			return
		}
		d.log.Debug("connection to control plane broken", "error", err)
		delay := d.o.ReconnectMin
		if span := d.o.ReconnectMax - d.o.ReconnectMin; span > 0 {
			delay += rand.N(span)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-d.ctx.Done():
			t.Stop()
			return
		}
	}
}

// dialer is lua-resty-websocket's client as data_plane.lua sets it up: TLS
// with the node's certificate, the name kong_clustering in shared mode, no
// subprotocol, no extension, frames checked by frameTap.
func (d *DP) dialer() *websocket.Dialer {
	host, _, _ := net.SplitHostPort(d.o.Addr)
	// Kong 3.9 runs an OpenSSL before 3.4.1 (Kong 3.10's changelog bumps
	// it to 3.4.1), whose ClientHello carries one X25519 key share; Go's
	// default adds a post-quantum one of 1,216 bytes.
	tc := &tls.Config{Certificates: []tls.Certificate{d.o.Cert}, MinVersion: tls.VersionTLS12,
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384}}
	if d.o.PKI {
		tc.RootCAs, tc.ServerName = d.o.RootCAs, d.o.ServerName
		if tc.ServerName == "" {
			tc.ServerName = host
		}
	} else {
		// Shared mode trusts exactly cluster_cert (appended to
		// lua_ssl_trusted_certificate), named kong_clustering in its CN,
		// which Go's name check ignores: pin it instead.
		tc.ServerName = "kong_clustering"
		tc.InsecureSkipVerify = true
		want := sha256.Sum256(d.o.Cert.Certificate[0])
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != want {
				return errors.New("the control plane's certificate is not cluster_cert")
			}
			return nil
		}
	}
	return &websocket.Dialer{
		HandshakeTimeout: 5 * time.Second,
		// Larger than any basic_info: the client library fragments a
		// message larger than its write buffer.
		WriteBufferSize: 64 << 10,
		ReadBufferSize:  4 << 10,
		NetDialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var nd net.Dialer
			raw, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tapped := &frameTap{Conn: raw, max: int64(d.o.MaxPayload)}
			tlsConn := tls.Client(raw, tc)
			if err := tlsConn.HandshakeContext(ctx); err != nil {
				_ = raw.Close()
				return nil, err
			}
			// The tap reads the plaintext: frames live inside TLS.
			tapped.Conn = tlsConn
			return tapped, nil
		},
	}
}

// URL is the node's /v1/outlet address with its query (utils.lua:
// node_id, node_hostname, node_version; not URL-encoded).
func (d *DP) URL() string {
	return "wss://" + d.o.Addr + "/v1/outlet?node_id=" + d.o.NodeID + "&node_hostname=" + d.o.Hostname + "&node_version=" + d.o.Version
}

// basicInfo is data_plane.lua's: plugins sorted by lower-case name
// (clustering/init.lua), labels only when set, and cjson's encoding of an
// empty table, {}, for an empty plugin list (plugins = off).
func (d *DP) basicInfo() []byte {
	names := make([]string, 0, len(d.plugins))
	for p := range d.plugins {
		names = append(names, p)
	}
	sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
	type plugin struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	var ps any = map[string]any{}
	if len(names) > 0 {
		list := make([]plugin, len(names))
		for i, n := range names {
			list[i] = plugin{n, d.o.Version}
		}
		ps = list
	}
	bi := map[string]any{"type": "basic_info", "plugins": ps,
		"process_conf": map[string]any{"role": "data_plane", "database": "off"}, "filters": map[string]any{}}
	if d.o.Labels != nil {
		bi["labels"] = d.o.Labels
	}
	b, _ := json.Marshal(bi)
	return b
}

func (d *DP) communicate() error {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	conn, resp, err := d.dialer().DialContext(ctx, d.URL(), http.Header{})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	go func() { <-ctx.Done(); _ = conn.Close() }()
	if err := conn.WriteMessage(websocket.BinaryMessage, d.basicInfo()); err != nil {
		return fmt.Errorf("send basic_info: %w", err)
	}
	d.update(func() { d.conn = conn; d.connects++ })

	var wmu sync.Mutex // one writer: pings and error frames
	pingNow := make(chan struct{}, 1)
	ping := func() error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteControl(websocket.PingMessage, []byte(d.Hash()), time.Now().Add(5*time.Second))
	}
	// write thread: a ping every interval, and right after a configuration.
	go func() {
		t := time.NewTicker(d.o.PingInterval)
		defer t.Stop()
		for {
			if ping() != nil {
				cancel()
				return
			}
			select {
			case <-t.C:
			case <-pingNow:
			case <-ctx.Done():
				return
			}
		}
	}()
	// config thread: the latest pending configuration only.
	pending := make(chan *decoded, 1)
	go func() {
		for {
			select {
			case m := <-pending:
				if !d.load(m, conn, &wmu) {
					continue
				}
				select {
				case pingNow <- struct{}{}:
				default:
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	// read thread: any frame but close, a ping or pong included, counts as
	// seen (data_plane.lua's last_seen), so the deadline moves at each; a
	// ping is not answered (an unknown frame to data_plane.lua).
	lastSeen := time.Now()
	seen := func(string) error {
		lastSeen = time.Now()
		return conn.SetReadDeadline(lastSeen.Add(d.o.PingWait))
	}
	conn.SetPongHandler(seen)
	conn.SetPingHandler(seen)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(d.o.PingWait))
		typ, data, err := conn.ReadMessage()
		if err != nil {
			if d.ctx.Err() != nil { // Stop; a failed ping's cancel says less than err
				return d.ctx.Err()
			}
			if time.Since(lastSeen) >= d.o.PingWait {
				return fmt.Errorf("did not receive a frame from the control plane within %s: %w", d.o.PingWait, err)
			}
			return fmt.Errorf("error while receiving frame from control plane: %w", err)
		}
		lastSeen = time.Now()
		if typ != websocket.BinaryMessage {
			continue // unknown frames are ignored
		}
		m, err := d.o.Shared.decode(data)
		if err != nil {
			return err // assert(inflate_gzip), assert(json_decode): fatal
		}
		if m.msg.Type != "reconfigure" {
			continue
		}
		select {
		case <-pending:
		default:
		}
		pending <- m
	}
}

// decode gunzips and decodes a frame once per distinct frame.
func (s *Shared) decode(data []byte) (*decoded, error) {
	key := sha256.Sum256(data)
	s.mu.Lock()
	m := s.frames[key]
	if m == nil {
		m = &decoded{}
		s.frames[key] = m
		s.order = append(s.order, key)
		if len(s.order) > 8 {
			delete(s.frames, s.order[0])
			s.order = s.order[1:]
		}
	}
	s.mu.Unlock()
	m.once.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			m.err = fmt.Errorf("inflate_gzip: %w", err)
			return
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			m.err = fmt.Errorf("inflate_gzip: %w", err)
			return
		}
		if err := json.Unmarshal(plain, &m.msg); err != nil {
			m.err = fmt.Errorf("json_decode: %w", err)
			return
		}
		if t := bytes.TrimSpace(m.msg.ConfigTable); m.msg.Type == "reconfigure" && len(t) > 0 && t[0] == '{' {
			m.table, m.plugins = t, configured(t)
			m.res = s.cache.CheckDeclarative(t)
		}
	})
	return m, m.err
}

// load is config_helper.update (Kong 3.9.3 config_helper.lua:296-384): a
// config_table that is not an object, or hashes that are not one (null
// included), raise and fail the update; the node computes a hash when none
// is sent; one equal to the running hash is taken unchecked; then the
// check, and the hash stored (import.lua: 32 zeros when "" or empty). A
// failure keeps the running configuration; in Konnect mode it is reported
// in an error frame. It reports whether the configuration is taken.
func (d *DP) load(m *decoded, conn *websocket.Conn, wmu *sync.Mutex) bool {
	hash, sent := "", m.msg.ConfigHash != nil
	if sent {
		hash = *m.msg.ConfigHash
	}
	res := m.res
	h := bytes.TrimSpace(m.msg.Hashes)
	switch {
	case m.table == nil || len(h) > 0 && h[0] != '{' && h[0] != '[':
		res.Invalid = &kongemu.ErrorBody{Name: "configuration reload failed", Message: "an exception was raised while updating the configuration"}
	case !sent:
		hash = res.Hash // the emulator's scheme, not Kong's MD5 one
		fallthrough
	default:
		if hash != "" && hash == d.Hash() {
			return true
		}
		if res.Invalid == nil {
			if miss := d.missing(m.plugins); len(miss) > 0 {
				res.Invalid = &kongemu.ErrorBody{Name: "invalid declarative configuration", Message: "declarative config is invalid: plugins: " + strings.Join(miss, ", ") + " not enabled; add it to the 'plugins' configuration property"}
			}
		}
	}
	if res.Invalid != nil {
		d.update(func() { d.refusals++ })
		d.log.Debug("unable to update running config", "error", res.Invalid.Message)
		if d.o.KonnectMode {
			d.sendError(conn, wmu, hash, res.Invalid)
		}
		return false
	}
	if hash == "" || empty(res.Counts) {
		hash = EmptyHash
	}
	d.update(func() {
		if d.hash != hash {
			d.hash = hash
			d.reconfigures++
		}
	})
	return true
}

func empty(counts map[string]int) bool {
	for k, n := range counts {
		if k != "workspaces" && n > 0 {
			return false
		}
	}
	return true
}

// missing lists the configured plugins the node lacks: Kong's schema
// refuses a plugin that is not enabled on the node.
func (d *DP) missing(configured []string) []string {
	var out []string
	for _, n := range configured {
		if !d.plugins[n] {
			out = append(out, n)
		}
	}
	return out
}

// configured lists the plugin names table configures, nested ones
// included, sorted and unique.
func configured(table []byte) []string {
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if list, ok := c.([]any); ok && k == "plugins" {
					for _, p := range list {
						if pm, ok := p.(map[string]any); ok {
							if n, ok := pm["name"].(string); ok {
								names = append(names, n)
							}
						}
					}
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	var v any
	if json.Unmarshal(table, &v) != nil {
		return nil
	}
	walk(v)
	sort.Strings(names)
	return slices.Compact(names)
}

// sendError is data_plane.lua's send_error (Konnect mode): the
// configuration's error (config_helper.lua's err_t) as a plain-JSON binary
// frame.
func (d *DP) sendError(conn *websocket.Conn, wmu *sync.Mutex, hash string, inv *kongemu.ErrorBody) {
	e := map[string]any{"name": inv.Name, "message": inv.Message, "source": "kong.clustering.config_helper.update"}
	if inv.Name != "configuration reload failed" {
		body, _ := json.Marshal(inv.Flattened())
		_ = json.Unmarshal(body, &e)
		e["name"] = "declarative configuration parse failure"
		e["source"] = "kong.db.declarative.parse_table"
	}
	if hash == "" {
		hash = EmptyHash
	}
	e["config_hash"] = hash
	b, _ := json.Marshal(map[string]any{"type": "error", "error": e})
	wmu.Lock()
	defer wmu.Unlock()
	_ = conn.WriteMessage(websocket.BinaryMessage, b)
}

// Query returns the parameters of the node's dial, for tests that dial by
// hand.
func (d *DP) Query() url.Values {
	return url.Values{"node_id": {d.o.NodeID}, "node_hostname": {d.o.Hostname}, "node_version": {d.o.Version}}
}
