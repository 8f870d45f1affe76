package server

import (
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

// sharedEncodings is how many recent status events keep their wire
// encoding per class of watchers: a watcher further behind than its
// broker buffer is cut over to a snapshot, so the changes it sends are
// among the latest.
const sharedEncodings = status.DefaultWatchBuffer

// maxEncodingClasses bounds the classes of streams: a compressor whose
// output varies from call to call would make each stream a class of its
// own; past the bound, streams send their own encodings.
const maxEncodingClasses = 8

func (s *hubService) WatchStatus(req *confighubv1.WatchStatusRequest, stream grpc.ServerStreamingServer[confighubv1.WatchStatusResponse]) error {
	ctx := stream.Context()
	// An unknown stream is NotFound, as for GetStatus; a watcher can wait
	// for a stream's first push only once a sink of it exists.
	if _, err := s.hub.Status(req.GetStream()); err != nil {
		return toStatus(err)
	}
	s.sendPageURL(ctx)
	enc := s.watchEnc.forStream(stream)
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
			if err := enc.send(stream, ev); err != nil {
				return fmt.Errorf("send status event: %w", err)
			}
		}
	}
}

// watchEncodings shares the wire encoding of each status event between the
// WatchStatus streams that encode alike, so a change watched by 1,000
// clients is marshalled once, not 1,000 times.
//
// A grpc.PreparedMsg is encoded with its stream's codec and compressor,
// which grpc does not expose: streams are grouped by the encoding of a
// fixed probe message, so a stream whose client compresses never sends an
// encoding made for one that does not.
type watchEncodings struct {
	mu      sync.Mutex
	classes []*encodingClass
}

type encodingClass struct {
	probe *grpc.PreparedMsg
	enc   *status.Encodings[*grpc.PreparedMsg]
}

var probeEvent = &confighubv1.WatchStatusResponse{Revision: 1, SnapshotReason: "probe"}

// forStream returns the class of streams that encode as s does; nil (send
// unshared) when s cannot prepare messages.
func (w *watchEncodings) forStream(s grpc.ServerStream) *encodingClass {
	probe := &grpc.PreparedMsg{}
	if err := probe.Encode(s, probeEvent); err != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.classes {
		// Equal encodings of the probe: same codec, same compressor.
		if reflect.DeepEqual(c.probe, probe) {
			return c
		}
	}
	if len(w.classes) >= maxEncodingClasses {
		return nil
	}
	c := &encodingClass{probe: probe, enc: status.NewEncodings[*grpc.PreparedMsg](sharedEncodings)}
	w.classes = append(w.classes, c)
	return c
}

// send sends ev on s with the class's shared encoding of ev. Snapshots are
// each watcher's own, so they are sent as they are.
func (c *encodingClass) send(s grpc.ServerStreamingServer[confighubv1.WatchStatusResponse], ev *confighubv1.WatchStatusResponse) error {
	if c == nil || ev.GetSnapshot() != nil {
		return s.Send(ev)
	}
	msg, err := c.enc.Get(ev, func() (*grpc.PreparedMsg, error) {
		m := &grpc.PreparedMsg{}
		return m, m.Encode(s, ev)
	})
	if err != nil {
		return err
	}
	return s.SendMsg(msg)
}
