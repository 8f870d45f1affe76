package kongdb

import (
	"cmp"
	"fmt"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/diffsync"
	"github.com/confighub/confighub/internal/tlsconfig"
	"github.com/confighub/confighub/sink"
)

// Kind is the registered kind name.
const Kind = "kong-db"

// DefaultConcurrency is the number of concurrent entity operations.
const DefaultConcurrency = 10

// Register adds the "kong-db" kind to r.
func Register(r *sink.Registry) error {
	return r.Register(Kind, New, sink.AsGateway(), sink.WithSpec(func(s *confighubv1.Sink) bool { return s.GetKongDb() != nil }))
}

// New is the factory of the "kong-db" kind.
func New(spec *confighubv1.Sink, deps sink.Deps) (sink.Sink, error) {
	ks := spec.GetKongDb()
	tlsCfg, err := tlsconfig.Build(ks.GetTls())
	if err != nil {
		return nil, fmt.Errorf("%w: sink %q: kong_db.tls: %v", sink.ErrInvalidSpec, spec.GetName(), err)
	}
	conc := cmp.Or(int(ks.GetConcurrency()), DefaultConcurrency)
	client, tr, err := diffsync.NewClient(diffsync.ClientOptions{
		BaseURL: ks.GetAddress(), TLS: tlsCfg, Headers: ks.GetHeaders(), MaxConns: conc, Workspace: ks.GetWorkspace(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: sink %q: kong_db: %v", sink.ErrInvalidSpec, spec.GetName(), err)
	}
	tlsconfig.WarnInsecure(deps.Logger, ks.GetTls(), ks.GetAddress())
	syncer := diffsync.New(client, diffsync.Options{Concurrency: conc, Logger: deps.Logger})
	return diffsync.NewSink(syncer, sink.Capabilities{Gateway: true}, tr, deps, nil), nil
}
