package server

import (
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// sharedEncodings is how many recent status events keep their wire
// encoding per class of watchers: a watcher further behind than its
// broker buffer (status.DefaultWatchBuffer) is cut over to a snapshot, so
// the changes it sends are among the latest.
const sharedEncodings = 1024

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
				return status.Error(codes.Unavailable, ShutdownMessage)
			}
			if err := enc.send(stream, ev); err != nil {
				return fmt.Errorf("send status event: %w", err)
			}
		}
	}
}

// watchEncodings shares the wire encoding of each status event between the
// WatchStatus streams that encode alike, so a change watched by 1,000
// clients is marshalled once, not 1,000 times (the broker hands every
// watcher the same read-only event).
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
	mu    sync.Mutex
	byEv  map[*confighubv1.WatchStatusResponse]*encoded
	// order is a ring of the keys of byEv, oldest at next once full.
	order []*confighubv1.WatchStatusResponse
	next  int
	// encodes counts the marshals (tests).
	encodes int
}

type encoded struct {
	once sync.Once
	msg  *grpc.PreparedMsg
	err  error
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
	c := &encodingClass{probe: probe, byEv: map[*confighubv1.WatchStatusResponse]*encoded{}}
	w.classes = append(w.classes, c)
	return c
}

// send sends ev on s with the class's shared encoding of ev. Snapshots are
// each watcher's own, so they are sent as they are.
func (c *encodingClass) send(s grpc.ServerStreamingServer[confighubv1.WatchStatusResponse], ev *confighubv1.WatchStatusResponse) error {
	if c == nil || ev.GetSnapshot() != nil {
		return s.Send(ev)
	}
	e := c.entry(ev)
	e.once.Do(func() {
		msg := &grpc.PreparedMsg{}
		if e.err = msg.Encode(s, ev); e.err == nil {
			e.msg = msg
		}
		c.mu.Lock()
		c.encodes++
		c.mu.Unlock()
	})
	if e.err != nil {
		return e.err
	}
	return s.SendMsg(e.msg)
}

// entry returns ev's slot, made (and the oldest evicted) when new.
func (c *encodingClass) entry(ev *confighubv1.WatchStatusResponse) *encoded {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byEv[ev]; e != nil {
		return e
	}
	e := &encoded{}
	c.byEv[ev] = e
	if len(c.order) < sharedEncodings {
		c.order = append(c.order, ev)
		return e
	}
	delete(c.byEv, c.order[c.next])
	c.order[c.next] = ev
	c.next = (c.next + 1) % len(c.order)
	return e
}
