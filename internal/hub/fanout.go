package hub

import (
	"context"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// Fanout is what the hub needs of the engine (engine.Engine implements it).
type Fanout interface {
	Restore(applied []store.Applied)
	Publish(cfg *config.Config)
	Current(stream string) *config.Config
	ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error)
	PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error)
	DeleteSink(name string) error
	ListSinks(stream string) []*confighubv1.Sink
	Status(stream string) (*confighubv1.GetStatusResponse, bool)
	Watch(ctx context.Context, stream string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse
	LastApplied(sinkName string) (*config.Config, bool)
	LastFailed(sinkName string) (*config.Config, *sink.Error, bool)
}

// ConvergedRestorer is an optional capability of a Fanout: it takes the
// convergences a store kept (store.ConvergedStore) before the streams are
// published, so a restart shows them as they were observed.
type ConvergedRestorer interface {
	RestoreConverged(cs []store.Converged)
}
