package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// The call log writes one "finished call" line per unary call: a
// plumbing call (health) at debug while it succeeds and at its code's
// level once it fails, the hub's own calls at their code's level, and no
// line the logger's level drops.
func TestCallLogLevels(t *testing.T) {
	push := "/" + confighubv1.ConfigHubService_ServiceDesc.ServiceName + "/PushConfig"
	check := "/" + healthpb.Health_ServiceDesc.ServiceName + "/Check"
	for _, c := range []struct {
		method string
		err    error
		level  slog.Level
		want   string // "" : no line
	}{
		{push, nil, slog.LevelDebug, "level=INFO"},
		{push, status.Error(codes.InvalidArgument, "config: bad JSON at 1:2"), slog.LevelDebug, "level=INFO"},
		{push, status.Error(codes.Unavailable, "down"), slog.LevelDebug, "level=WARN"},
		{check, nil, slog.LevelDebug, "level=DEBUG"},
		{check, nil, slog.LevelInfo, ""},
		{check, status.Error(codes.Unavailable, "down"), slog.LevelInfo, "level=WARN"},
		{push, nil, slog.LevelWarn, ""},
	} {
		var out bytes.Buffer
		log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: c.level}))
		ic := logging.UnaryServerInterceptor(middlewareLogger(log), logging.WithLogOnEvents(logging.FinishCall))
		_, _ = ic(context.Background(), &confighubv1.PushConfigRequest{}, &grpc.UnaryServerInfo{FullMethod: c.method}, func(context.Context, any) (any, error) {
			return &confighubv1.PushConfigResponse{}, c.err
		})
		line := out.String()
		if c.want == "" {
			if line != "" {
				t.Errorf("%s (%v) at %v: logged %q, want nothing", c.method, c.err, c.level, line)
			}
			continue
		}
		if strings.Count(line, "\n") != 1 || !strings.Contains(line, c.want) || !strings.Contains(line, `msg="finished call"`) {
			t.Errorf("%s (%v) at %v: logged %q, want one finished call at %s", c.method, c.err, c.level, line, c.want)
		}
	}
}
