package main

import (
	"context"

	middleware "github.com/grpc-ecosystem/go-grpc-middleware/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/confighub/confighub/internal/server"
)

// drainer ends the server-streaming calls (WatchStatus) with Unavailable once drain is called.
type drainer struct {
	ctx   context.Context
	drain context.CancelFunc
}

func newDrainer() *drainer {
	ctx, cancel := context.WithCancel(context.Background())
	return &drainer{ctx: ctx, drain: cancel}
}

// interceptor gives each server-only-streaming call a context that drain ends.
func (d *drainer) interceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.IsClientStream || !info.IsServerStream {
			return handler(srv, ss)
		}
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		stop := context.AfterFunc(d.ctx, cancel)
		defer stop()
		ws := middleware.WrapServerStream(ss)
		ws.WrappedContext = ctx
		err := handler(srv, ws)
		if d.ctx.Err() != nil && ss.Context().Err() == nil {
			return status.Error(codes.Unavailable, server.ShutdownMessage)
		}
		return err
	}
}
