package server

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Keepalive is the server's HTTP/2 keepalive policy: how often clients may
// ping, and how the server finds a peer that went away without closing
// its connection (a watcher whose node died or whose network dropped).
type Keepalive struct {
	// MinClientPing is the shortest interval between client pings that
	// the server tolerates, with or without active streams; a client that
	// pings more often is cut with GOAWAY ENHANCE_YOUR_CALM
	// "too_many_pings" after three such pings.
	MinClientPing time.Duration
	// PingAfterIdle: after this long without a frame from the client, the
	// server pings it.
	PingAfterIdle time.Duration
	// PingTimeout: a connection whose ping is not acknowledged within
	// this is closed, ending its streams (a dead watcher is dropped).
	PingTimeout time.Duration
}

// DefaultKeepalive permits client pings every 5 s or more (controllers
// ping every 10 s on long WatchStatus streams; the margin absorbs timer
// jitter) and drops a silent peer about 40 s after its last frame.
func DefaultKeepalive() Keepalive {
	return Keepalive{MinClientPing: 5 * time.Second, PingAfterIdle: 30 * time.Second, PingTimeout: 10 * time.Second}
}

// serverOptions is k as gRPC server options.
func (k Keepalive) serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: k.MinClientPing, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: k.PingAfterIdle, Timeout: k.PingTimeout}),
	}
}
