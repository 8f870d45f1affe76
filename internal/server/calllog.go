package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// logUnary logs each unary call as "finished call" with the fields, in the
// order, that go-grpc-middleware's logging interceptor gives them
// (TestUnaryCallLogMatchesMiddleware), at the same levels (plumbing
// services at debug unless they fail). It builds them only once the call
// ended and only when the logger takes the line: the middleware built and
// copied its field lists on every call, about 30 allocations per push
// whether or not a line was written.
// Streams keep the middleware's interceptor (one call per stream).
func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		logged := err // the line reads io.EOF as OK; the caller gets err as it is
		if errors.Is(logged, io.EOF) {
			logged = nil
		}
		code := status.Code(logged)
		service, method := splitMethod(info.FullMethod)
		level := slog.Level(logging.DefaultServerCodeToLevel(code))
		if level < slog.LevelWarn && plumbingServices[service] {
			level = slog.LevelDebug
		}
		if !log.Enabled(ctx, level) {
			return resp, err
		}
		attrs := make([]slog.Attr, 0, 11)
		attrs = append(attrs,
			slog.String(logging.SystemTag[0], logging.SystemTag[1]),
			slog.String(logging.ComponentFieldKey, logging.KindServerFieldValue),
			slog.String(logging.ServiceFieldKey, service),
			slog.String(logging.MethodFieldKey, method),
			slog.String(logging.MethodTypeFieldKey, "unary"))
		if p, ok := peer.FromContext(ctx); ok {
			attrs = append(attrs, slog.String("peer.address", p.Addr.String()))
		}
		attrs = append(attrs, slog.String("grpc.start_time", start.Format(time.RFC3339)))
		if d, ok := ctx.Deadline(); ok {
			attrs = append(attrs, slog.String("grpc.request.deadline", d.Format(time.RFC3339)))
		}
		attrs = append(attrs, slog.String("grpc.code", code.String()))
		if logged != nil {
			attrs = append(attrs, slog.String("grpc.error", logged.Error()))
		}
		attrs = append(attrs, slog.String("grpc.time_ms", formatMillis(time.Since(start))))
		log.LogAttrs(ctx, level, "finished call", attrs...)
		return resp, err
	}
}

// formatMillis is d in milliseconds as the middleware writes it
// (fmt's %v of a float32 of whole microseconds / 1000).
func formatMillis(d time.Duration) string {
	ms := float32(d.Nanoseconds()/1000) / 1000
	return strconv.FormatFloat(float64(ms), 'g', -1, 32)
}

// splitMethod splits "/package.Service/Method" as the middleware does.
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.IndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", "unknown"
}
