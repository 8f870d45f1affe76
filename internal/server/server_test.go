package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nopSink accepts every configuration.
type nopSink struct{}

func (nopSink) Apply(context.Context, *config.Config) error { return nil }
func (nopSink) Describe() sink.Capabilities                 { return sink.Capabilities{} }

// startServer serves an in-process hub (memory store, one sink "s" of
// stream "default" that accepts everything) on 127.0.0.1:0 and returns
// its address.
func startServer(t *testing.T, opts ...server.Option) string {
	t.Helper()
	addr, _ := startServerWith(t, nil, opts...)
	return addr
}

// startServerWith is startServer with options of the hub; it returns the
// hub too.
func startServerWith(t testing.TB, hubOpts []hub.Option, opts ...server.Option) (string, *hub.Hub) {
	t.Helper()
	addr, h, _ := startHubServer(t, hubOpts, opts...)
	return addr, h
}

// startHubServer is startServerWith that also returns the server.
func startHubServer(t testing.TB, hubOpts []hub.Option, opts ...server.Option) (string, *hub.Hub, *server.Server) {
	t.Helper()
	reg := sink.NewRegistry()
	if err := reg.Register("nop", func(*confighubv1.Sink, sink.Deps) (sink.Sink, error) { return nopSink{}, nil }); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	eng := engine.New(reg, engine.WithRecorder(st))
	h := hub.New(st, hub.PortsOf(eng), hubOpts...)
	if err := h.Start(context.Background(), []*confighubv1.Sink{{Name: "s", Kind: "nop"}}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return harness.ServeGRPC(t, srv.GRPC, eng.Stop, func() { _ = st.Close() }), h, srv
}

// TestReflectionV1Alpha: a client that knows only grpc.reflection.v1alpha
// (ghz v0.93.0, older grpcurl) lists the hub's services and reads their
// descriptors.
func TestReflectionV1Alpha(t *testing.T) {
	addr := startServer(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	//nolint:staticcheck // v1alpha is what older clients speak: that is the point of the test.
	stream, err := reflectionv1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // v1alpha messages, as above.
	if err := stream.Send(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("v1alpha ListServices: %v", err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"confighub.v1.ConfigHubService", "confighub.v1.SinkAdminService", "confighub.sink.v1.SinkPluginService",
		"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} {
		if !slices.Contains(names, want) {
			t.Errorf("v1alpha ListServices lacks %s: %v", want, names)
		}
	}
	//nolint:staticcheck // v1alpha messages, as above.
	if err := stream.Send(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "confighub.v1.ConfigHubService"}}); err != nil {
		t.Fatal(err)
	}
	resp, err = stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Fatalf("v1alpha FileContainingSymbol returned no descriptor: %v", resp)
	}
	_ = stream.CloseSend()
}

// TestPlumbingCallsLogAtDebug: reflection (grpcurl list) and health checks
// (probes, every few seconds) are logged at debug; the hub's own calls stay
// INFO lines.
func TestPlumbingCallsLogAtDebug(t *testing.T) {
	rec := harness.NewLogRecorder(t, slog.LevelDebug)
	conn := harness.Dial(t, startServer(t, server.WithLogger(rec.Logger())))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	refl, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := refl.Recv(); err != nil {
		t.Fatal(err)
	}
	_ = refl.CloseSend()
	if _, err := refl.Recv(); err != io.EOF {
		t.Fatalf("reflection stream end: %v", err)
	}
	if _, err := confighubv1.NewSinkAdminServiceClient(conn).ListSinks(ctx, &confighubv1.ListSinksRequest{}); err != nil {
		t.Fatal(err)
	}
	var lines string
	harness.Eventually(t, 10*time.Second, func() bool {
		lines = strings.Join(rec.Lines(), "\n")
		return strings.Count(lines, "finished call") == 3
	}, "three calls logged")
	for _, want := range []string{
		"DEBUG finished call protocol=grpc grpc.component=server grpc.service=grpc.health.v1.Health",
		"DEBUG finished call protocol=grpc grpc.component=server grpc.service=grpc.reflection.v1.ServerReflection",
		"INFO finished call protocol=grpc grpc.component=server grpc.service=confighub.v1.SinkAdminService",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("no line %q in\n%s", want, lines)
		}
	}
}

// TestPushSaysHowManySinks: PushConfig and UploadConfig answer with the
// number of sinks the stream had at the ack: 0 for a stream nobody applies
// (a misspelt stream name), 2 once two sinks of it exist.
func TestPushSaysHowManySinks(t *testing.T) {
	conn := harness.Dial(t, startServer(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc, admin := confighubv1.NewConfigHubServiceClient(conn), confighubv1.NewSinkAdminServiceClient(conn)
	res, err := hc.PushConfig(ctx, &confighubv1.PushConfigRequest{Stream: "prod", Config: []byte(`{"_format_version":"3.0"}`)})
	if err != nil || res.Sinks == nil || res.GetSinks() != 0 {
		t.Fatalf("push to a stream without sinks: sinks=%v err=%v, want 0 (set)", res.Sinks, err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := admin.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: &confighubv1.Sink{Name: name, Stream: "prod", Spec: &confighubv1.Sink_Custom{}, Kind: "nop"}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err = hc.PushConfig(ctx, &confighubv1.PushConfigRequest{Stream: "prod", Config: []byte(`{"_format_version":"3.0","services":[]}`)})
	if err != nil || res.GetSinks() != 2 {
		t.Fatalf("push: sinks=%d err=%v, want 2", res.GetSinks(), err)
	}
	up, err := hc.UploadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"_format_version":"3.0","consumers":[]}`)
	sum := sha256.Sum256(body)
	for _, m := range []*confighubv1.UploadConfigRequest{
		{Msg: &confighubv1.UploadConfigRequest_Header{Header: &confighubv1.UploadHeader{Stream: "other", TotalSize: uint64(len(body)), ExpectedHash: hex.EncodeToString(sum[:])}}},
		{Msg: &confighubv1.UploadConfigRequest_Chunk{Chunk: body}},
	} {
		if err := up.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	ures, err := up.CloseAndRecv()
	if err != nil || ures.Sinks == nil || ures.GetSinks() != 0 {
		t.Fatalf("upload to a stream without sinks: sinks=%v err=%v, want 0 (set)", ures.Sinks, err)
	}
}

// TestServeAfterShutdown: Serve returns nil once Shutdown stopped the
// server, also when the Shutdown came before Serve began (a SIGTERM right
// after the start), where grpc's Serve alone returns ErrServerStopped;
// any other end of Serve (here a closed listener) is still its error.
func TestServeAfterShutdown(t *testing.T) {
	reg := sink.NewRegistry()
	st := memory.New()
	defer st.Close()
	eng := engine.New(reg, engine.WithRecorder(st))
	defer eng.Stop()
	h := hub.New(st, hub.PortsOf(eng))
	if err := h.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	newServer := func() *server.Server {
		srv, err := server.New(h)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	listen := func() net.Listener {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return lis
	}

	srv := newServer()
	srv.Shutdown(context.Background())
	if err := srv.Serve(listen()); err != nil {
		t.Errorf("Serve after Shutdown: %v, want nil", err)
	}

	srv = newServer()
	lis := listen()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	// A call answered shows Serve serving before the Shutdown.
	if _, err := healthpb.NewHealthClient(harness.Dial(t, lis.Addr().String())).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown(context.Background())
	if err := <-served; err != nil {
		t.Errorf("Serve then Shutdown: %v, want nil", err)
	}

	srv = newServer()
	lis = listen()
	_ = lis.Close()
	if err := srv.Serve(lis); err == nil {
		t.Error("Serve on a closed listener returned nil, want its error")
	}
	srv.Shutdown(context.Background())
}

// TestGetConfigOverTheMessageLimit: a configuration stored by an upload
// but larger than the server's message limit is not read back by
// GetConfig; the answer is ResourceExhausted naming the sizes and
// --max-message-bytes, where grpc's own refusal names no flag.
func TestGetConfigOverTheMessageLimit(t *testing.T) {
	addr, h, _ := startHubServer(t, nil, server.WithMaxMessageBytes(4096))
	raw := []byte(`{"_format_version":"3.0","x":"` + strings.Repeat("a", 8192) + `"}`)
	ctx := context.Background()
	if _, err := h.Push(ctx, hub.PushInput{Config: raw}); err != nil {
		t.Fatal(err)
	}
	_, err := confighubv1.NewConfigHubServiceClient(harness.Dial(t, addr)).GetConfig(ctx, &confighubv1.GetConfigRequest{})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "--max-message-bytes") || !strings.Contains(err.Error(), fmt.Sprint(len(raw), " bytes")) {
		t.Fatalf("GetConfig of %d bytes over a 4096-byte limit: %v, want ResourceExhausted naming the size and --max-message-bytes", len(raw), err)
	}
}
