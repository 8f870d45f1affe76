package server

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

// sharedEncodings is how many recent status events keep their marshalled
// bytes: a watcher further behind than its broker buffer is cut over to a
// snapshot, so the changes it sends are among the latest.
const sharedEncodings = status.DefaultWatchBuffer

func (s *hubService) WatchStatus(req *confighubv1.WatchStatusRequest, stream grpc.ServerStreamingServer[confighubv1.WatchStatusResponse]) error {
	ctx := stream.Context()
	// An unknown stream is NotFound, as for GetStatus; a watcher can wait
	// for a stream's first push only once a sink of it exists.
	if _, err := s.hub.Status(req.GetStream()); err != nil {
		return toStatus(err)
	}
	done, err := s.hub.BeginWatch()
	if err != nil {
		return toStatus(err)
	}
	defer done()
	s.sendPageURL(ctx)
	// The header goes out now, not with the first event: a resumed watch
	// with nothing new gets none for a while, and hubclient takes the
	// header as the hub's answer that the watch is open (WithWatchState).
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
			if err := s.watchEnc.send(stream, ev); err != nil {
				return fmt.Errorf("send status event: %w", err)
			}
		}
	}
}

// watchEncodings shares the marshalled bytes of each status event between
// all WatchStatus streams, so a change watched by 1,000 clients is
// marshalled once, not 1,000 times. Every stream uses the server's one
// codec (grpc.ForceServerCodecV2), so the marshalled bytes are the same
// for all; grpc then frames and compresses them per stream as for any
// message, so a client that asked for compression gets its compressor's
// output and one that did not gets plain bytes.
type watchEncodings struct {
	enc *status.Encodings[*marshalled]
}

func newWatchEncodings() watchEncodings {
	return watchEncodings{enc: status.NewEncodings[*marshalled](sharedEncodings)}
}

// send sends ev on s with the shared marshalled bytes of ev. Snapshots
// are each watcher's own, so they are sent as they are.
func (w watchEncodings) send(s grpc.ServerStreamingServer[confighubv1.WatchStatusResponse], ev *confighubv1.WatchStatusResponse) error {
	if ev.GetSnapshot() != nil {
		return s.Send(ev)
	}
	m, err := w.enc.Get(ev, func() (*marshalled, error) {
		b, err := proto.Marshal(ev)
		return &marshalled{b: b}, err
	})
	if err != nil {
		return err
	}
	return s.SendMsg(m)
}
