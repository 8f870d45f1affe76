package server

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

func (s *hubService) WatchStatus(req *confighubv1.WatchStatusRequest, stream grpc.ServerStreamingServer[confighubv1.WatchStatusResponse]) error {
	ctx := stream.Context()
	// An unknown stream is NotFound, as for GetStatus.
	if _, err := s.hub.Status(req.GetStream()); err != nil {
		return toStatus(err)
	}
	done, err := s.hub.BeginWatch()
	if err != nil {
		return toStatus(err)
	}
	defer done()
	s.sendPageURL(ctx)
	// The header goes out now: hubclient takes it as the hub's answer that the watch is open.
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	ch := s.hub.Watch(ctx, req.GetStream(), req.GetFromRevision())
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return grpcstatus.Error(codes.Unavailable, ShutdownMessage)
			}
			if err := s.send(stream, ev); err != nil {
				return fmt.Errorf("send status event: %w", err)
			}
		}
	}
}

// send sends ev on stream; a change is marshalled once for all streams (watchEnc), a snapshot is each watcher's own.
func (s *hubService) send(stream grpc.ServerStreamingServer[confighubv1.WatchStatusResponse], ev *confighubv1.WatchStatusResponse) error {
	if ev.GetSnapshot() != nil {
		return stream.Send(ev)
	}
	m, err := s.watchEnc.Get(ev, func() (*marshalled, error) {
		b, err := proto.Marshal(ev)
		return &marshalled{b: b}, err
	})
	if err != nil {
		return err
	}
	return stream.SendMsg(m)
}
