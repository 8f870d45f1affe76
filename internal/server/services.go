package server

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/sink"
)

// Redactor removes credentials from a configuration shown for diagnostics, saying whether it removed any.
type Redactor func(raw []byte, f config.Format) ([]byte, bool, error)

type hubService struct {
	confighubv1.UnimplementedConfigHubServiceServer
	hub      *hub.Hub
	redact   Redactor
	pageURL  func() string
	watchEnc *status.Encodings[*marshalled] // see send
	maxMsg   int                            // the largest message the server sends (--max-message-bytes)
}

// sendPageURL sets the hubclient.StatusPageHeader when the hub serves a status page.
func (s *hubService) sendPageURL(ctx context.Context) {
	if s.pageURL == nil {
		return
	}
	if u := s.pageURL(); u != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(hubclient.StatusPageHeader, u))
	}
}

var _ confighubv1.ConfigHubServiceServer = (*hubService)(nil)

// formats maps the API's formats to config's (unspecified: detect).
var formats = map[confighubv1.Format]config.Format{
	confighubv1.Format_FORMAT_JSON: config.FormatJSON,
	confighubv1.Format_FORMAT_YAML: config.FormatYAML,
}

func formatOut(f config.Format) confighubv1.Format {
	for k, v := range formats {
		if v == f {
			return k
		}
	}
	return confighubv1.Format_FORMAT_UNSPECIFIED
}

func (s *hubService) PushConfig(ctx context.Context, req *confighubv1.PushConfigRequest) (*confighubv1.PushConfigResponse, error) {
	res, err := s.hub.Push(ctx, hub.PushInput{
		Stream:             req.GetStream(),
		Config:             req.GetConfig(),
		Format:             formats[req.GetFormat()],
		ExpectedGeneration: req.GetExpectedGeneration(),
		Labels:             req.GetLabels(),
		Origin:             originOf(ctx),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &confighubv1.PushConfigResponse{Generation: res.Generation, Hash: res.Hash, Unchanged: res.Unchanged, Sinks: proto.Uint32(uint32(res.Sinks))}, nil
}

func (s *hubService) UploadConfig(stream grpc.ClientStreamingServer[confighubv1.UploadConfigRequest, confighubv1.UploadConfigResponse]) error {
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return grpcstatus.Error(codes.InvalidArgument, "upload: no header: the first message must be a header")
	}
	if err != nil {
		return err
	}
	hdr := first.GetHeader()
	if hdr == nil {
		return grpcstatus.Error(codes.InvalidArgument, "upload: the first message must be a header (stream, format, total_size, expected_hash)")
	}
	up, err := s.hub.BeginUpload(stream.Context(), hub.PushInput{
		Stream:             hdr.GetStream(),
		Format:             formats[hdr.GetFormat()],
		ExpectedGeneration: hdr.GetExpectedGeneration(),
		Labels:             hdr.GetLabels(),
		Origin:             originOf(stream.Context()),
	}, hdr.GetTotalSize(), hdr.GetExpectedHash())
	if err != nil {
		return toStatus(err)
	}
	defer up.Abort() // drops what an unfinished upload staged; gives its budget back
	for {
		msg := &uploadMsg{} // the chunk stays in the receive buffers until written
		err := stream.RecvMsg(msg)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			msg.free()
			if st, ok := grpcstatus.FromError(err); ok && st.Code() == codes.Canceled {
				return grpcstatus.Errorf(codes.Canceled, "upload cancelled after %d of %d bytes: nothing stored", up.Received(), hdr.GetTotalSize())
			}
			return err
		}
		if msg.GetHeader() != nil {
			return grpcstatus.Error(codes.InvalidArgument, "upload: a second header arrived; only the first message is a header")
		}
		pieces, free := msg.chunk()
		err = up.WriteChunk(pieces)
		free()
		if err != nil {
			return toStatus(err)
		}
	}
	res, err := up.Finish(stream.Context())
	if err != nil {
		return toStatus(err)
	}
	return stream.SendAndClose(&confighubv1.UploadConfigResponse{Generation: res.Generation, Hash: res.Hash, Unchanged: res.Unchanged, Sinks: proto.Uint32(uint32(res.Sinks))})
}

func (s *hubService) GetConfig(ctx context.Context, req *confighubv1.GetConfigRequest) (*confighubv1.GetConfigResponse, error) {
	out := &confighubv1.GetConfigResponse{Sink: req.GetSink()}
	var (
		cfg  *config.Config
		serr *sink.Error
		err  error
	)
	if req.GetSink() != "" {
		cfg, serr, err = s.hub.SinkConfig(req.GetSink(), req.GetFailed())
	} else {
		cfg, err = s.hub.Generation(ctx, req.GetStream(), req.GetGeneration())
	}
	if err != nil {
		return nil, toStatus(err)
	}
	if serr != nil {
		out.Error, out.ErrorBody = serr.Error(), serr.Body
	}
	out.Stream, out.Generation, out.Hash, out.Format, out.Labels = cfg.Stream, cfg.Generation, cfg.Hash, formatOut(cfg.Format), cfg.Labels
	out.AcceptTime, out.Config = timestamppb.New(cfg.AcceptTime), cfg.Raw
	if s.redact != nil {
		red, changed, err := s.redact(cfg.Raw, cfg.Format)
		if err != nil {
			return nil, grpcstatus.Errorf(codes.Internal, "redact the configuration of stream %q: %v", cfg.Stream, err)
		}
		out.Config, out.Redacted = red, changed
		if out.ErrorBody != nil {
			out.ErrorBody, _, _ = s.redact(out.ErrorBody, config.FormatJSON)
		}
	}
	// grpc's own refusal would name no flag.
	if n := proto.Size(out); s.maxMsg > 0 && n > s.maxMsg {
		return nil, grpcstatus.Errorf(codes.ResourceExhausted, "the configuration of stream %q (generation %d, %d bytes) does not fit in one answer: %d bytes, over the hub's gRPC message limit of %d bytes (--max-message-bytes); raise the limit to read it",
			cfg.Stream, cfg.Generation, len(out.Config), n, s.maxMsg)
	}
	return out, nil
}

func (s *hubService) GetStatus(ctx context.Context, req *confighubv1.GetStatusRequest) (*confighubv1.GetStatusResponse, error) {
	st, err := s.hub.Status(req.GetStream())
	if err != nil {
		return nil, toStatus(err)
	}
	s.sendPageURL(ctx)
	return st, nil
}

type adminService struct {
	confighubv1.UnimplementedSinkAdminServiceServer
	hub *hub.Hub
}

var _ confighubv1.SinkAdminServiceServer = (*adminService)(nil)

func (s *adminService) ListSinks(_ context.Context, req *confighubv1.ListSinksRequest) (*confighubv1.ListSinksResponse, error) {
	return &confighubv1.ListSinksResponse{Sinks: s.hub.ListSinks(req.GetStream())}, nil
}

func (s *adminService) PutSink(ctx context.Context, req *confighubv1.PutSinkRequest) (*confighubv1.PutSinkResponse, error) {
	out, created, err := s.hub.PutSink(ctx, req.GetSink())
	if err != nil {
		return nil, toStatus(err)
	}
	return &confighubv1.PutSinkResponse{Sink: out, Created: created}, nil
}

func (s *adminService) DeleteSink(ctx context.Context, req *confighubv1.DeleteSinkRequest) (*confighubv1.DeleteSinkResponse, error) {
	if err := s.hub.DeleteSink(ctx, req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	return &confighubv1.DeleteSinkResponse{}, nil
}

func (s *adminService) ListStreams(context.Context, *confighubv1.ListStreamsRequest) (*confighubv1.ListStreamsResponse, error) {
	infos := s.hub.ListStreams()
	out := &confighubv1.ListStreamsResponse{Streams: make([]*confighubv1.StreamInfo, len(infos))}
	for i, in := range infos {
		si := &confighubv1.StreamInfo{Name: in.Name, Sinks: uint32(in.Sinks)}
		if c := in.Config; c != nil {
			si.Generation, si.Hash, si.ConfigBytes = c.Generation, c.Hash, uint64(len(c.Raw))
			si.AcceptTime = timestamppb.New(c.AcceptTime)
		}
		out.Streams[i] = si
	}
	return out, nil
}

func (s *adminService) DeleteStream(ctx context.Context, req *confighubv1.DeleteStreamRequest) (*confighubv1.DeleteStreamResponse, error) {
	if err := s.hub.DeleteStream(ctx, req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	return &confighubv1.DeleteStreamResponse{}, nil
}
