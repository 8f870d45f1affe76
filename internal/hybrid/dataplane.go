package hybrid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/kong"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// errDisconnected is the data plane's health while it has no connection.
var errDisconnected = errors.New("the data plane is disconnected")

// dataPlane is the kong-dp sink of one node_id. It outlives its
// connections: a data plane that reconnects takes its sink back, and one
// that stays away is purged (Server.purge).
type dataPlane struct {
	s    *Server
	name string
	// refs counts the engine's sinks that hold it (a replaced sink's
	// old and new ones, briefly). Guarded by s.mu.
	refs int

	mu       sync.Mutex
	sess     *session // current connection, nil when disconnected
	notifier sink.Notifier
	// info is what the data plane told at its last connection.
	info                hello
	addr                string
	since, disconnected time.Time
	syncStatus          string
	purge               clockwork.Timer
	// changed is closed (and replaced) at every ping, error frame and
	// change of connection: an Apply waiting for the data plane looks
	// again.
	changed chan struct{}
}

var (
	_ sink.Sink   = (*dataPlane)(nil)
	_ sink.Runner = (*dataPlane)(nil)
	_ sink.Closer = (*dataPlane)(nil)
)

// session is one WebSocket connection of a data plane. Its fields below
// conn are guarded by the dataPlane's mu.
type session struct {
	conn    *websocket.Conn
	plugins map[string]string
	closed  chan struct{}
	once    sync.Once

	lastPing time.Time
	lastHash string
	// errs are the error frames received since the last send, by the
	// config_hash they name.
	errs map[string]*sink.Error
}

func (ss *session) close() {
	ss.once.Do(func() {
		close(ss.closed)
		_ = ss.conn.Close()
	})
}

func newDataPlane(s *Server, name string) *dataPlane {
	return &dataPlane{s: s, name: name, changed: make(chan struct{})}
}

// Describe: a data plane is a Kong gateway (GATE_ANY_GATEWAY counts it);
// its apply writes a shared frame and then waits up to a ping interval for
// the data plane, so it takes no apply slot: 10,000 data planes would
// otherwise queue behind 64 slots for a round trip each.
func (d *dataPlane) Describe() sink.Capabilities {
	return sink.Capabilities{Gateway: true, NoApplySlot: true}
}

// Run keeps the engine's notifier for the connection's events (until
// Close) and reports the data plane as it is now; it returns at once. A
// data plane that is connected is sent the current generation again, as
// Kong's control plane does at every connection.
func (d *dataPlane) Run(_ context.Context, n sink.Notifier) {
	d.mu.Lock()
	d.notifier = n
	connected := d.sess != nil
	d.reportLocked()
	if connected {
		n.Resync("data plane connected")
	}
	d.mu.Unlock()
}

// Close: the engine stopped a sink of the data plane (deleted, replaced or
// handed over to another replica), after its Run and before a new sink's:
// its notifier is forgotten. After the last, the data plane is forgotten
// here.
func (d *dataPlane) Close() error {
	d.mu.Lock()
	d.notifier = nil
	d.mu.Unlock()
	d.s.mu.Lock()
	d.refs--
	d.s.mu.Unlock()
	d.s.drop(d)
	return nil
}

// reportLocked tells the engine the data plane's state. d.mu is held (the
// engine never calls the sink while it holds its own lock).
func (d *dataPlane) reportLocked() {
	if d.notifier == nil {
		return
	}
	st := &confighubv1.DataPlaneStatus{
		NodeId:     d.name,
		Hostname:   d.info.hostname,
		Version:    d.info.version,
		Labels:     d.info.Labels, // not changed after the connection
		Address:    d.addr,
		Connected:  d.sess != nil,
		SyncStatus: d.syncStatus,
	}
	if !d.since.IsZero() {
		st.ConnectedSince = timestamppb.New(d.since)
	}
	if !d.disconnected.IsZero() {
		st.DisconnectedSince = timestamppb.New(d.disconnected)
	}
	if d.sess != nil && !d.sess.lastPing.IsZero() {
		st.LastPing = timestamppb.New(d.sess.lastPing)
		st.ConfigHash = d.sess.lastHash
	}
	d.notifier.DataPlane(st)
	if d.sess == nil {
		if d.syncStatus == SyncKongVersionIncompatible {
			d.notifier.Health(d.info.refusal)
		} else {
			d.notifier.Health(errDisconnected)
		}
	} else {
		d.notifier.Health(nil)
	}
}

func (d *dataPlane) broadcastLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// connect makes sess the data plane's connection; an older one is closed
// (Kong's control plane keys clients by socket, but one sink follows one
// connection: the newest).
func (d *dataPlane) connect(sess *session, info hello, addr string) {
	d.mu.Lock()
	old := d.sess
	d.sess, d.info, d.addr = sess, info, addr
	d.since, d.disconnected = d.s.clock.Now(), time.Time{}
	d.syncStatus = SyncNormal
	if d.purge != nil {
		d.purge.Stop()
		d.purge = nil
	}
	d.reportLocked()
	if d.notifier != nil {
		d.notifier.Resync("data plane connected")
	}
	d.broadcastLocked()
	d.mu.Unlock()
	if old != nil {
		old.close()
	}
}

// refused records a data plane the hub would not serve (its version): it
// shows with the sync status, disconnected.
func (d *dataPlane) refused(info hello, addr string) {
	d.mu.Lock()
	d.info, d.addr, d.syncStatus = info, addr, SyncKongVersionIncompatible
	if d.sess == nil {
		d.disconnected = d.s.clock.Now()
		d.schedulePurgeLocked()
	}
	d.reportLocked()
	d.mu.Unlock()
}

// disconnect ends sess; the sink shows disconnected and is purged after
// the purge delay unless the data plane comes back.
func (d *dataPlane) disconnect(sess *session) {
	sess.close()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess != sess {
		return
	}
	d.sess = nil
	d.disconnected = d.s.clock.Now()
	d.schedulePurgeLocked()
	d.reportLocked()
	d.broadcastLocked()
}

func (d *dataPlane) schedulePurgeLocked() {
	if d.purge != nil {
		d.purge.Stop()
	}
	d.purge = d.s.clock.AfterFunc(d.s.opts.PurgeDelay, func() { d.s.purge(d) })
}

// expired: disconnected for the purge delay.
func (d *dataPlane) expired() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sess == nil && !d.disconnected.IsZero() && d.s.clock.Since(d.disconnected) >= d.s.opts.PurgeDelay
}

// ping records a ping of sess carrying hash.
func (d *dataPlane) ping(sess *session, hash string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	sess.lastPing, sess.lastHash = d.s.clock.Now(), hash
	if d.sess == sess {
		d.reportLocked()
	}
	d.broadcastLocked()
}

// errorFrame is what a data plane in Konnect mode sends when it could not
// load a configuration (kong/clustering/data_plane.lua, send_error): Kong's
// parse error, with the flattened entity errors.
type errorFrame struct {
	Type  string          `json:"type"`
	Error json.RawMessage `json:"error"`
}

type errorDetail struct {
	Name       string `json:"name"`
	Message    string `json:"message"`
	ConfigHash string `json:"config_hash"`
}

// reportError records an error frame: the generation it names fails with
// its entity errors, as the Admin API sink reports Kong's 400.
func (d *dataPlane) reportError(sess *session, raw json.RawMessage) {
	var det errorDetail
	_ = json.Unmarshal(raw, &det)
	ees, msg := kong.ParseFlattenedErrors(raw)
	if msg == "" {
		msg = det.Message
	}
	name := det.Name
	if name == "" {
		name = "configuration error"
	}
	se := &sink.Error{Code: sink.CodeRejected, Permanent: true, Message: "the data plane refused the configuration: " + name + ": " + msg, EntityErrors: ees, Body: raw}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sess.errs == nil {
		sess.errs = map[string]*sink.Error{}
	}
	sess.errs[det.ConfigHash] = se
	d.broadcastLocked()
}

// Apply sends cfg's shared frame to the data plane and waits until a ping
// carries its hash: that is when the data plane runs it. A ping of another
// hash more than the apply bound after the send, or an error frame, fails
// the generation; a closed connection is retried when the data plane is
// back.
func (d *dataPlane) Apply(ctx context.Context, cfg *config.Config) error {
	f := d.s.frames.get(cfg)
	if f.err != nil {
		return f.err
	}
	d.mu.Lock()
	sess := d.sess
	if sess == nil {
		d.mu.Unlock()
		return &sink.Error{Code: sink.CodeUnavailable, Err: errDisconnected}
	}
	if miss := missingPlugins(f.plugins, sess.plugins); len(miss) > 0 {
		d.syncStatus = SyncPluginSetIncompatible
		d.reportLocked()
		d.mu.Unlock()
		return &sink.Error{Code: sink.CodeInvalid, Permanent: true,
			Message: fmt.Sprintf("%s: generation %d configures plugins the data plane lacks: %s; not sent", SyncPluginSetIncompatible, cfg.Generation, strings.Join(miss, ", "))}
	}
	if d.syncStatus != SyncNormal {
		d.syncStatus = SyncNormal
		d.reportLocked()
	}
	delete(sess.errs, f.sent)
	d.mu.Unlock()

	started := d.s.clock.Now()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(writeTimeout)
	}
	if err := d.s.write(sess, f, dl); err != nil {
		d.disconnect(sess)
		return &sink.Error{Code: sink.CodeUnavailable, Message: "send the configuration to the data plane: " + err.Error(), Err: err}
	}
	// The apply bound counts from the end of the write: a large frame to
	// a busy data plane may take a while, and its pings of the old hash
	// meanwhile say nothing.
	sent := d.s.clock.Now()
	for {
		d.mu.Lock()
		ch := d.changed
		se := sess.errs[f.sent]
		ping, hash := sess.lastPing, sess.lastHash
		d.mu.Unlock()
		switch {
		case se != nil:
			return se
		case !ping.Before(started) && hash == f.expect:
			return nil
		case !ping.Before(sent) && ping.Sub(sent) > d.s.opts.ApplyBound:
			return &sink.Error{Code: sink.CodeRejected, Permanent: true,
				Message: fmt.Sprintf("the data plane did not load generation %d (hash %s); it still runs %s", cfg.Generation, f.expect, hash)}
		}
		select {
		case <-ch:
		case <-sess.closed:
			return &sink.Error{Code: sink.CodeUnavailable, Message: fmt.Sprintf("the data plane disconnected before it reported generation %d", cfg.Generation), Err: errDisconnected}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
