package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// TestUnaryCallLogMatchesMiddleware: the unary call log line is the one
// go-grpc-middleware's logging interceptor writes (same message, level,
// fields and order; the times aside), for calls that succeed or fail, with
// and without a deadline, of the hub's services and of plumbing ones, and
// neither writes one the logger's level drops.
func TestUnaryCallLogMatchesMiddleware(t *testing.T) {
	push := "/" + confighubv1.ConfigHubService_ServiceDesc.ServiceName + "/PushConfig"
	check := "/" + healthpb.Health_ServiceDesc.ServiceName + "/Check"
	cases := []struct {
		name     string
		method   string
		err      error
		deadline bool
		level    slog.Level
	}{
		{"ok", push, nil, false, slog.LevelDebug},
		{"ok with deadline", push, nil, true, slog.LevelDebug},
		{"unavailable", push, status.Error(codes.Unavailable, "store: a commit could not be made durable"), true, slog.LevelDebug},
		{"invalid", push, status.Error(codes.InvalidArgument, "config: bad JSON at 1:2"), false, slog.LevelDebug},
		{"plain error", push, errors.New("boom"), false, slog.LevelDebug},
		{"io.EOF, logged as OK and returned as it is", push, io.EOF, false, slog.LevelDebug},
		{"health ok", check, nil, false, slog.LevelDebug},
		{"health failing", check, status.Error(codes.Unavailable, "down"), false, slog.LevelDebug},
		{"ok at info", push, nil, false, slog.LevelInfo},
		{"health ok at info", check, nil, false, slog.LevelInfo},
		{"ok at warn", push, nil, false, slog.LevelWarn},
		{"unavailable at warn", push, status.Error(codes.Unavailable, "x"), false, slog.LevelWarn},
	}
	times := regexp.MustCompile(`(grpc\.start_time|grpc\.time_ms|grpc\.request\.deadline|time)=\S+`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(ic grpc.UnaryServerInterceptor) {
				ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 4242}})
				if c.deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithDeadline(ctx, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
					defer cancel()
				}
				_, err := ic(ctx, &confighubv1.PushConfigRequest{}, &grpc.UnaryServerInfo{FullMethod: c.method}, func(context.Context, any) (any, error) {
					return &confighubv1.PushConfigResponse{}, c.err
				})
				if !errors.Is(err, c.err) {
					t.Fatalf("interceptor returned %v, want %v", err, c.err)
				}
			}
			var mine, theirs bytes.Buffer
			opts := &slog.HandlerOptions{Level: c.level}
			run(logUnary(slog.New(slog.NewTextHandler(&mine, opts))))
			run(logging.UnaryServerInterceptor(middlewareLogger(slog.New(slog.NewTextHandler(&theirs, opts))), logging.WithLogOnEvents(logging.FinishCall)))
			got, want := times.ReplaceAllString(mine.String(), "$1=T"), times.ReplaceAllString(theirs.String(), "$1=T")
			if got != want {
				t.Errorf("line\n%s\nwant (the middleware's)\n%s", got, want)
			}
			if c.deadline && !bytes.Contains(mine.Bytes(), []byte("grpc.request.deadline=2030-01-02T03:04:05Z")) {
				t.Errorf("no deadline in %s", mine.String())
			}
		})
	}
}

// TestTimeMillisFormat: grpc.time_ms reads as the middleware's.
func TestTimeMillisFormat(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, 999, time.Microsecond, 123456, 1500 * time.Microsecond, 12345678, time.Second, 123456789012, 3 * time.Hour} {
		if got, want := formatMillis(d), logging.DurationToTimeMillisFields(d)[1]; got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
