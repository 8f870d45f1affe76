package server_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startServer serves an in-process hub (memory store, no sinks) on
// 127.0.0.1:0 and returns its address.
func startServer(t *testing.T, opts ...server.Option) string {
	t.Helper()
	st := memory.New()
	eng := engine.New(sink.NewRegistry(), engine.WithRecorder(st))
	h := hub.New(st, eng)
	if err := h.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.GRPC.Serve(lis) }()
	t.Cleanup(func() {
		srv.GRPC.Stop()
		<-done
		eng.Stop()
		_ = st.Close()
	})
	return lis.Addr().String()
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
