package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/tlsconfig"
	"github.com/confighub/confighub/sink"
)

const (
	// Kind is the registered kind name.
	Kind = "plugin"
	// DefaultChunkBytes is the chunk size when the plugin names none.
	DefaultChunkBytes = 1 << 20
	// DefaultBackoffMax caps the engine's retry backoff at grpc's reconnect cap.
	DefaultBackoffMax = 30 * time.Second
	describeTimeout   = 10 * time.Second
)

// options tune the kind's connections (tests shorten them).
type options struct {
	Backoff           backoff.Config
	MinConnectTimeout time.Duration
}

// Register adds the "plugin" kind to r.
func Register(r *sink.Registry) error {
	return register(r, options{backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: DefaultBackoffMax}, 5 * time.Second})
}

func register(r *sink.Registry, o options) error {
	return r.Register(Kind, func(spec *confighubv1.Sink, deps sink.Deps) (sink.Sink, error) {
		return newSink(spec, deps, o)
	}, sink.WithSpec(func(s *confighubv1.Sink) bool { return s.GetPlugin() != nil }),
		sink.WithDefaults(&confighubv1.SinkOptions{Backoff: &confighubv1.BackoffOptions{Max: durationpb.New(DefaultBackoffMax)}}))
}

// Sink is one external plugin.
type Sink struct {
	name, address string
	settings      *structpb.Struct
	log           *slog.Logger
	conn          *grpc.ClientConn
	client        sinkv1.SinkPluginServiceClient

	epoch        atomic.Uint64 // transport connections; desc is valid for its epoch
	describeLock chan struct{} // unlike a mutex, given up on ctx
	desc         atomic.Pointer[described]
}

type described struct {
	epoch uint64
	resp  *sinkv1.DescribeResponse
}

var (
	_ sink.Sink   = (*Sink)(nil)
	_ sink.Runner = (*Sink)(nil)
	_ sink.Closer = (*Sink)(nil)
)

func newSink(spec *confighubv1.Sink, deps sink.Deps, o options) (*Sink, error) {
	ps := spec.GetPlugin()
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("plugin", ps.GetAddress())
	creds := insecure.NewCredentials()
	if ps.GetTls() != nil {
		tc, err := tlsconfig.Build(ps.GetTls())
		if err != nil {
			return nil, fmt.Errorf("%w: sink %q: plugin.tls: %v", sink.ErrInvalidSpec, spec.GetName(), err)
		}
		tlsconfig.WarnInsecure(log, ps.GetTls(), ps.GetAddress())
		creds = credentials.NewTLS(tc)
	}
	s := &Sink{name: spec.GetName(), address: ps.GetAddress(), settings: ps.GetSettings(), log: log, describeLock: make(chan struct{}, 1)}
	conn, err := grpc.NewClient(ps.GetAddress(),
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: o.Backoff, MinConnectTimeout: o.MinConnectTimeout}),
		grpc.WithIdleTimeout(0), // stay connected so Run sees a lost plugin at once
		grpc.WithStatsHandler(connCounter{&s.epoch}))
	if err != nil {
		return nil, fmt.Errorf("%w: sink %q: plugin.address %q: %v", sink.ErrInvalidSpec, spec.GetName(), ps.GetAddress(), err)
	}
	s.conn = conn
	s.client = sinkv1.NewSinkPluginServiceClient(conn)
	return s, nil
}

// Describe: a plugin is never a gateway; Apply enforces its own limits.
func (s *Sink) Describe() sink.Capabilities { return sink.Capabilities{} }

// Close releases the connection.
func (s *Sink) Close() error { return s.conn.Close() }

// Run keeps the connection up, Describes each new one, reports health, and resyncs a plugin that came back.
func (s *Sink) Run(ctx context.Context, n sink.Notifier) {
	lost := false
	_ = s.follow(ctx, func(st connectivity.State) bool {
		switch st {
		case connectivity.Ready:
			dctx, cancel := context.WithTimeout(ctx, describeTimeout)
			_, err := s.described(dctx)
			cancel()
			if err != nil {
				n.Health(fmt.Errorf("plugin %s: describe: %w", s.address, err))
			} else if n.Health(nil); lost {
				n.Resync("plugin reconnected")
			}
			lost = true // the next state is a lost connection
		case connectivity.TransientFailure:
			lost = true
			n.Health(fmt.Errorf("plugin %s is unreachable", s.address))
		}
		return true
	})
}

// described returns the plugin's Describe for the current connection.
func (s *Sink) described(ctx context.Context) (*sinkv1.DescribeResponse, error) {
	select {
	case s.describeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.describeLock }()
	if d := s.desc.Load(); d != nil && d.epoch == s.epoch.Load() {
		return d.resp, nil
	}
	// Connect first, so the Describe is recorded against the connection it runs on.
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	ep := s.epoch.Load()
	if d := s.desc.Load(); d != nil && d.epoch == ep {
		return d.resp, nil
	}
	resp, err := s.client.Describe(ctx, &sinkv1.DescribeRequest{Sink: s.name, Settings: s.settings})
	if err != nil {
		return nil, err
	}
	s.desc.Store(&described{epoch: ep, resp: resp})
	s.log.Debug("plugin described", "name", resp.GetName(), "version", resp.GetVersion(),
		"formats", resp.GetFormats(), "max_config_bytes", resp.GetMaxConfigBytes(), "chunk_bytes", resp.GetChunkBytes())
	return resp, nil
}

// connect waits, bounded by ctx, while the connection is being made.
func (s *Sink) connect(ctx context.Context) error {
	return s.follow(ctx, func(st connectivity.State) bool {
		return st != connectivity.Ready && st != connectivity.TransientFailure
	})
}

// follow passes each state of the connection to fn until fn returns false, ctx ends or it shuts down.
func (s *Sink) follow(ctx context.Context, fn func(connectivity.State) bool) error {
	for {
		st := s.conn.GetState()
		switch st {
		case connectivity.Shutdown:
			return errors.New("the plugin sink is closed")
		case connectivity.Idle:
			s.conn.Connect()
		}
		if !fn(st) {
			return nil
		}
		if !s.conn.WaitForStateChange(ctx, st) {
			return ctx.Err()
		}
	}
}

// Apply sends cfg to the plugin as one Apply stream.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	d, err := s.described(ctx)
	if err != nil {
		return transportError("describe", err)
	}
	body, f, err := render(cfg, d)
	if err != nil {
		return &sink.Error{Code: sink.CodeInvalid, Message: err.Error(), Permanent: true, Err: err}
	}
	if max := d.GetMaxConfigBytes(); max > 0 && uint64(len(body)) > max {
		return &sink.Error{Code: sink.CodeTooLarge, Permanent: true,
			Message: fmt.Sprintf("configuration of %d bytes is larger than the plugin's max_config_bytes %d", len(body), max)}
	}
	chunk := cmp.Or(int(d.GetChunkBytes()), DefaultChunkBytes)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.client.Apply(sctx)
	if err != nil {
		return transportError("apply", err)
	}
	hdr := &sinkv1.ApplyHeader{
		Sink: s.name, Stream: cfg.Stream, Generation: cfg.Generation, Hash: cfg.Hash,
		Format: f, TotalSize: uint64(len(body)), Settings: s.settings, Labels: cfg.Labels,
	}
	if err := stream.Send(&sinkv1.ApplyRequest{Msg: &sinkv1.ApplyRequest_Header{Header: hdr}}); err != nil {
		return s.sendFailed(stream, err)
	}
	for off := 0; off < len(body); off += chunk {
		end := min(off+chunk, len(body))
		if err := stream.Send(&sinkv1.ApplyRequest{Msg: &sinkv1.ApplyRequest_Chunk{Chunk: body[off:end]}}); err != nil {
			return s.sendFailed(stream, err)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return transportError("apply", err)
	}
	return responseError(resp)
}

// sendFailed gets the plugin's answer or status when Send fails with io.EOF.
func (s *Sink) sendFailed(stream grpc.ClientStreamingClient[sinkv1.ApplyRequest, sinkv1.ApplyResponse], err error) error {
	if errors.Is(err, io.EOF) {
		resp, rerr := stream.CloseAndRecv()
		if rerr != nil {
			return transportError("apply", rerr)
		}
		return responseError(resp)
	}
	return transportError("apply", err)
}

func responseError(r *sinkv1.ApplyResponse) error {
	if r.GetApplied() {
		return nil
	}
	e := &sink.Error{Message: r.GetMessage(), Permanent: r.GetPermanent()}
	if ra := r.GetRetryAfter(); ra != nil {
		e.RetryAfter = ra.AsDuration()
	}
	if e.Message == "" {
		e.Message = "the plugin did not apply the configuration"
	}
	own := r.GetCode()
	e.Code = sink.ParseCode(own, e.Permanent)
	switch {
	case own == "" && e.RetryAfter > 0 && !e.Permanent:
		e.Code = sink.CodeRateLimited
	case own != "" && !sink.Code(own).Known():
		e.Message = fmt.Sprintf("plugin code %q: %s", own, e.Message)
	}
	for _, ee := range r.GetEntityErrors() {
		e.EntityErrors = append(e.EntityErrors, entityError(ee))
	}
	return e
}

func entityError(ee *sinkv1.EntityError) *confighubv1.EntityError {
	out := &confighubv1.EntityError{
		EntityType: ee.GetEntityType(), EntityName: ee.GetEntityName(), EntityId: ee.GetEntityId(),
		EntityTags: ee.GetEntityTags(),
	}
	for _, fe := range ee.GetErrors() {
		out.Errors = append(out.Errors, &confighubv1.FieldError{Type: fe.GetType(), Field: fe.GetField(), Message: fe.GetMessage()})
	}
	return out
}

// transportError maps a gRPC failure to a retryable error.
func transportError(op string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return &sink.Error{Code: sink.CodeUnavailable, Message: fmt.Sprintf("plugin %s: %v", op, err), Err: err}
	}
	code := sink.CodeInternal // the plugin failed on its side: Internal, Unknown, Unimplemented, ...
	switch st.Code() {
	case codes.Unavailable, codes.Canceled:
		code = sink.CodeUnavailable
	case codes.DeadlineExceeded:
		code = sink.CodeTimeout
	}
	return &sink.Error{Code: code, Message: fmt.Sprintf("plugin %s: gRPC %s: %s", op, strings.ToLower(codeName(st.Code())), st.Message()), Err: err}
}

// codeName is c's name in kebab-case.
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// render picks the bytes to send: as pushed if the plugin takes that format, else a shared conversion.
func render(cfg *config.Config, d *sinkv1.DescribeResponse) ([]byte, sinkv1.Format, error) {
	formats := d.GetFormats()
	if len(formats) == 0 {
		formats = []sinkv1.Format{sinkv1.Format_FORMAT_JSON}
	}
	own := sinkv1.Format_FORMAT_JSON
	if cfg.Format == config.FormatYAML {
		own = sinkv1.Format_FORMAT_YAML
	}
	var b []byte
	var err error
	f := sinkv1.Format_FORMAT_JSON
	switch {
	case slices.Contains(formats, own):
		return cfg.Raw, own, nil
	case slices.Contains(formats, f):
		b, err = cfg.JSON()
	case slices.Contains(formats, sinkv1.Format_FORMAT_YAML):
		f = sinkv1.Format_FORMAT_YAML
		b, err = cfg.YAML()
	default:
		return nil, 0, fmt.Errorf("the plugin accepts none of JSON or YAML (formats %v)", formats)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("convert generation %d to %s: %w", cfg.Generation, f, err)
	}
	return b, f, nil
}

type connCounter struct{ n *atomic.Uint64 }

func (c connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c connCounter) HandleRPC(context.Context, stats.RPCStats)                       {}
func (c connCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c connCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnBegin); ok {
		c.n.Add(1)
	}
}
