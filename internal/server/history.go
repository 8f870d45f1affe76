package server

import (
	"context"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/hub"
)

// Anonymous is the pusher of a configuration pushed without --auth-tokens.
const Anonymous = "anonymous"

// originOf is who is calling: the token's name (or Anonymous) and the peer's address.
func originOf(ctx context.Context) config.Origin {
	o := config.Origin{Pusher: Anonymous}
	if p, ok := auth.FromContext(ctx); ok && p.Name != "" {
		o.Pusher = p.Name
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		o.Peer = p.Addr.String()
	}
	return o
}

func (s *hubService) ListGenerations(ctx context.Context, req *confighubv1.ListGenerationsRequest) (*confighubv1.ListGenerationsResponse, error) {
	gens, next, err := s.hub.Generations(ctx, req.GetStream(), req.GetBefore(), int(req.GetLimit()))
	if err != nil {
		return nil, toStatus(err)
	}
	out := &confighubv1.ListGenerationsResponse{Stream: config.StreamName(req.GetStream()), NextBefore: next}
	for _, g := range gens {
		r := &confighubv1.GenerationRecord{
			Generation: g.Generation, Hash: g.Hash, Size: g.Size, Labels: g.Labels,
			Pusher: g.Origin.Pusher, Peer: g.Origin.Peer, RollbackOf: g.Origin.RollbackOf,
			SinksRejected: uint32(g.Rejected), Outcome: g.Outcome,
		}
		if !g.AcceptTime.IsZero() {
			r.AcceptTime = timestamppb.New(g.AcceptTime)
		}
		for t, n := range g.Origin.Entities {
			if r.Entities == nil {
				r.Entities = map[string]uint32{}
			}
			r.Entities[t] = uint32(n)
		}
		if st := g.Status; st != nil {
			r.SinksApplied, r.SinksTotal, r.ConvergeTime = st.GetSinksApplied(), st.GetSinksTotal(), st.GetConvergeTime()
		}
		out.Generations = append(out.Generations, r)
	}
	return out, nil
}

func (s *hubService) DiffConfig(ctx context.Context, req *confighubv1.DiffConfigRequest) (*confighubv1.DiffConfigResponse, error) {
	var d hub.Diff
	var err error
	if req.GetSink() != "" {
		d, err = s.hub.DiffSink(ctx, req.GetSink())
	} else {
		d, err = s.hub.DiffGenerations(ctx, req.GetStream(), req.GetFrom(), req.GetTo())
	}
	if err != nil {
		return nil, toStatus(err)
	}
	return d.Proto(), nil
}

func (s *hubService) RollbackConfig(ctx context.Context, req *confighubv1.RollbackConfigRequest) (*confighubv1.RollbackConfigResponse, error) {
	res, err := s.hub.Rollback(ctx, req.GetStream(), req.GetGeneration(), req.GetExpectedGeneration(), originOf(ctx))
	if err != nil {
		return nil, toStatus(err)
	}
	return &confighubv1.RollbackConfigResponse{Generation: res.Generation, Hash: res.Hash, Unchanged: res.Unchanged,
		Sinks: proto.Uint32(uint32(res.Sinks)), RollbackOf: req.GetGeneration()}, nil
}
