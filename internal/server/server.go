package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"buf.build/go/protovalidate"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	pvmw "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/protovalidate"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	grpcstatus "google.golang.org/grpc/status"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/hub"
)

// ShutdownMessage comes with Unavailable to a status watch that a shutdown
// ends; docs/api.md quotes it (cmd/confighub TestDocsQuoteShutdownMessage).
const ShutdownMessage = "the hub is shutting down: resume with from_revision set to the last revision seen"

// DefaultMaxMessageBytes is the default largest gRPC message (larger pushes upload).
const DefaultMaxMessageBytes = 64 << 20

type options struct {
	log        *slog.Logger
	maxMsg     int
	unary      []grpc.UnaryServerInterceptor
	stream     []grpc.StreamServerInterceptor
	serverOpts []grpc.ServerOption
	redact     Redactor
	keepalive  Keepalive
	pageURL    func() string
	maxStreams int
	refusals   hub.Refusals
}

// Option configures the server.
type Option func(*options)

// WithLogger sets the logger of the call log and recovered panics.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMaxMessageBytes bounds a received message (and so a unary push).
func WithMaxMessageBytes(n int) Option { return func(o *options) { o.maxMsg = n } }

// WithInterceptors adds interceptors between logging and validation (auth, metrics).
func WithInterceptors(u []grpc.UnaryServerInterceptor, s []grpc.StreamServerInterceptor) Option {
	return func(o *options) { o.unary = append(o.unary, u...); o.stream = append(o.stream, s...) }
}

// WithServerOptions adds raw grpc.ServerOptions (TLS credentials, ...).
func WithServerOptions(so ...grpc.ServerOption) Option {
	return func(o *options) { o.serverOpts = append(o.serverOpts, so...) }
}

// WithMaxConcurrentStreams bounds the calls one client connection may have open at once.
func WithMaxConcurrentStreams(n int) Option { return func(o *options) { o.maxStreams = n } }

// WithRefusals counts the refusals of the per-connection bound.
func WithRefusals(r hub.Refusals) Option { return func(o *options) { o.refusals = r } }

// WithRedactor sets how GetConfig removes credentials.
func WithRedactor(r Redactor) Option { return func(o *options) { o.redact = r } }

// WithStatusPageURL makes GetStatus and WatchStatus send url() in hubclient.StatusPageHeader.
func WithStatusPageURL(url func() string) Option { return func(o *options) { o.pageURL = url } }

// Keepalive is the HTTP/2 keepalive policy: a client pinging more often
// than MinClientPing gets GOAWAY; after PingAfterIdle the server pings and
// drops a connection whose ping is not acknowledged within PingTimeout.
type Keepalive struct {
	MinClientPing, PingAfterIdle, PingTimeout time.Duration
}

// DefaultKeepalive permits client pings every 5 s (controllers ping every
// 10 s) and drops a silent peer about 40 s after its last frame.
func DefaultKeepalive() Keepalive {
	return Keepalive{MinClientPing: 5 * time.Second, PingAfterIdle: 30 * time.Second, PingTimeout: 10 * time.Second}
}

// streamWorkers serve calls and keep their grown stacks between them: growing a fresh stack for a
// push cost more CPU than the rest of it (docs/performance.md, scenario 7).
const streamWorkers = 64

// Server is the hub's gRPC server with its health service.
type Server struct {
	GRPC   *grpc.Server
	Health *health.Server
	hub    *hubService
	conns  *connLimit
}

// New builds the gRPC server for h: both services, health, reflection.
func New(h *hub.Hub, opts ...Option) (*Server, error) {
	o := options{log: slog.New(slog.DiscardHandler), maxMsg: DefaultMaxMessageBytes, keepalive: DefaultKeepalive(), maxStreams: DefaultMaxConcurrentStreams}
	for _, f := range opts {
		f(&o)
	}
	conns := newConnLimit(o.maxStreams, o.refusals)
	logger := middlewareLogger(o.log)
	logOpts := []logging.Option{logging.WithLogOnEvents(logging.FinishCall)}
	rec := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		o.log.ErrorContext(ctx, "panic in handler", "panic", p, "stack", string(debug.Stack()))
		return grpcstatus.Errorf(codes.Internal, "internal error: %v", p)
	})
	unary := append([]grpc.UnaryServerInterceptor{
		conns.unary,
		recovery.UnaryServerInterceptor(rec),
		logging.UnaryServerInterceptor(logger, logOpts...),
	}, o.unary...)
	unary = append(unary, pvmw.UnaryServerInterceptor(protovalidate.GlobalValidator))
	stream := append([]grpc.StreamServerInterceptor{
		conns.stream,
		recovery.StreamServerInterceptor(rec),
		logging.StreamServerInterceptor(logger, logOpts...),
	}, o.stream...)
	stream = append(stream, pvmw.StreamServerInterceptor(protovalidate.GlobalValidator))

	k := o.keepalive
	gs := grpc.NewServer(append([]grpc.ServerOption{
		grpc.NumStreamWorkers(streamWorkers),
		grpc.ForceServerCodecV2(codec{encoding.GetCodecV2(protoenc.Name)}),
		grpc.MaxRecvMsgSize(o.maxMsg),
		grpc.MaxSendMsgSize(o.maxMsg),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: k.MinClientPing, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: k.PingAfterIdle, Timeout: k.PingTimeout}),
		grpc.MaxConcurrentStreams(uint32(conns.max + streamHeadroom)),
		grpc.StatsHandler(conns),
	}, o.serverOpts...)...)
	svc := &hubService{hub: h, redact: o.redact, pageURL: o.pageURL, watchEnc: status.NewEncodings[*marshalled](status.DefaultWatchBuffer), maxMsg: o.maxMsg}
	confighubv1.RegisterConfigHubServiceServer(gs, svc)
	confighubv1.RegisterSinkAdminServiceServer(gs, &adminService{hub: h})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	// Reflection also lists SinkPluginService, for plugin authors; v1alpha
	// is for older clients (ghz v0.93.0, grpcurl before v1.8.8).
	ropts := reflection.ServerOptions{Services: withPluginContract{gs}}
	reflectionv1.RegisterServerReflectionServer(gs, reflection.NewServerV1(ropts))
	reflectionv1alpha.RegisterServerReflectionServer(gs, reflection.NewServer(ropts))
	s := &Server{GRPC: gs, Health: hs, hub: svc, conns: conns}
	s.SetServing(true)
	return s, nil
}

// SetServing sets the health of the server and of both services.
func (s *Server) SetServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, svc := range []string{"", confighubv1.ConfigHubService_ServiceDesc.ServiceName, confighubv1.SinkAdminService_ServiceDesc.ServiceName} {
		s.Health.SetServingStatus(svc, st)
	}
}

// ConnectionUsage is the most calls one connection has open, and the bound.
func (s *Server) ConnectionUsage() hub.Usage {
	return hub.Usage{Flag: FlagMaxConcurrentStreams, Used: s.conns.busiest(), Limit: s.conns.max}
}

// Serve serves gRPC on lis and returns nil once Shutdown stopped it, even before it began.
func (s *Server) Serve(lis net.Listener) error {
	err := s.GRPC.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown marks the server not serving, then stops it gracefully.
func (s *Server) Shutdown(ctx context.Context) {
	s.Health.Shutdown()
	done := make(chan struct{})
	go func() { s.GRPC.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.GRPC.Stop()
		<-done
	}
}

// middlewareLogger is the go-grpc-middleware logger of the call log.
func middlewareLogger(log *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		level := slog.Level(lvl)
		if level < slog.LevelWarn && plumbing(fields) {
			level = slog.LevelDebug
		}
		log.Log(ctx, level, msg, fields...)
	})
}

// plumbingServices are logged at debug unless they fail.
var plumbingServices = map[string]bool{
	healthpb.Health_ServiceDesc.ServiceName:                    true,
	reflectionv1.ServerReflection_ServiceDesc.ServiceName:      true,
	reflectionv1alpha.ServerReflection_ServiceDesc.ServiceName: true,
}

// plumbing reports whether the logging fields are of a call to one of the plumbingServices.
func plumbing(fields []any) bool {
	for i := 0; i+1 < len(fields); i += 2 {
		if k, _ := fields[i].(string); k == logging.ServiceFieldKey {
			s, _ := fields[i+1].(string)
			return plumbingServices[s]
		}
	}
	return false
}

// withPluginContract adds SinkPluginService to what reflection lists.
type withPluginContract struct{ s *grpc.Server }

func (w withPluginContract) GetServiceInfo() map[string]grpc.ServiceInfo {
	m := w.s.GetServiceInfo()
	m[sinkv1.SinkPluginService_ServiceDesc.ServiceName] = grpc.ServiceInfo{Metadata: sinkv1.SinkPluginService_ServiceDesc.Metadata}
	return m
}
