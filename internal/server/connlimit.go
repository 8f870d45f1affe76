package server

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/confighub/confighub/internal/hub"
)

// The per-connection bound of calls open at once, and its flag.
const (
	DefaultMaxConcurrentStreams = 1000
	FlagMaxConcurrentStreams    = "--max-concurrent-streams"
)

// streamHeadroom is how many HTTP/2 streams past the bound a connection may open, so that calls
// past it reach connLimit, which refuses them by name, instead of waiting silently in the client.
const streamHeadroom = 16

// connLimit bounds the calls in flight per connection: a stats handler
// gives each connection its counter, the first interceptors count calls.
type connLimit struct {
	max      int64
	refusals hub.Refusals
	mu       sync.Mutex
	conns    map[*connCalls]struct{}
}

// connCalls counts one connection's calls in flight.
type connCalls struct{ n atomic.Int64 }

type connKey struct{}

func newConnLimit(max int, r hub.Refusals) *connLimit {
	return &connLimit{max: int64(max), refusals: r, conns: map[*connCalls]struct{}{}}
}

func (l *connLimit) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, &connCalls{})
}

func (l *connLimit) HandleConn(ctx context.Context, s stats.ConnStats) {
	c, _ := ctx.Value(connKey{}).(*connCalls)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s.(type) {
	case *stats.ConnBegin:
		l.conns[c] = struct{}{}
	case *stats.ConnEnd:
		delete(l.conns, c)
	}
}

func (l *connLimit) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (l *connLimit) HandleRPC(context.Context, stats.RPCStats)                       {}

// enter counts a call of ctx's connection and returns what ends it, or refuses it.
func (l *connLimit) enter(ctx context.Context) (func(), error) {
	c, _ := ctx.Value(connKey{}).(*connCalls)
	if c == nil {
		return func() {}, nil
	}
	if c.n.Add(1) > l.max {
		c.n.Add(-1)
		if l.refusals != nil {
			l.refusals.Refused(FlagMaxConcurrentStreams)
		}
		return nil, status.Errorf(codes.ResourceExhausted, "this connection has the %d calls open that it may have at once (%s): end calls (status watches) that are not read, open another connection, or raise %s",
			l.max, FlagMaxConcurrentStreams, FlagMaxConcurrentStreams)
	}
	return func() { c.n.Add(-1) }, nil
}

func (l *connLimit) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	done, err := l.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return h(ctx, req)
}

func (l *connLimit) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	done, err := l.enter(ss.Context())
	if err != nil {
		return err
	}
	defer done()
	return h(srv, ss)
}

// busiest is the most calls any one connection has open.
func (l *connLimit) busiest() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m int64
	for c := range l.conns {
		m = max(m, c.n.Load())
	}
	return m
}
