package main

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/confighub/confighub/internal/server"
)

// drainer ends the server-streaming calls (WatchStatus) when a shutdown
// starts: a watch never ends on its own, so a graceful stop would wait the
// whole --shutdown-timeout and cut every call in flight. Watchers get
// Unavailable and resume elsewhere or after the restart.
type drainer struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newDrainer() *drainer {
	ctx, cancel := context.WithCancel(context.Background())
	return &drainer{ctx: ctx, cancel: cancel}
}

// drain ends every server-streaming call now and every one started later.
func (d *drainer) drain() { d.cancel() }

// interceptor gives each server-streaming call a context that also ends
// when drain is called. Client-streaming calls (UploadConfig) are left to
// finish: they end on their own.
func (d *drainer) interceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.IsClientStream || !info.IsServerStream {
			return handler(srv, ss)
		}
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		stop := context.AfterFunc(d.ctx, cancel)
		defer stop()
		err := handler(srv, &drainStream{ServerStream: ss, ctx: ctx})
		if d.ctx.Err() != nil && ss.Context().Err() == nil {
			return status.Error(codes.Unavailable, server.ShutdownMessage)
		}
		return err
	}
}

type drainStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *drainStream) Context() context.Context { return s.ctx }
