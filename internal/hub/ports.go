package hub

import (
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// Publisher takes what the store accepted: the records loaded at start, and every new generation.
type Publisher interface {
	Restore(applied []store.Applied)
	// RestoreConverged comes before the streams are published.
	RestoreConverged(cs []store.Converged)
	Publish(cfg *config.Config)
	Current(stream string) *config.Config
	// Held is how many streams hold a configuration and their bytes (asked on every push).
	Held() (streams int, bytes int64)
	// DeleteStream forgets a stream; an error naming them while sinks read it.
	DeleteStream(stream string) error
	// Streams returns every stream's current configuration (shared).
	Streams() []*config.Config
}

// SinkAdmin validates, starts, stops and lists sinks; the counts and lookups answer without copying every spec.
type SinkAdmin interface {
	ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error)
	PutSink(spec *confighubv1.Sink) (*confighubv1.Sink, bool, error)
	DeleteSink(name string) error
	ListSinks(stream string) []*confighubv1.Sink
	SinkCount(stream string) int
	SinkTotal() int
	// Sink returns a copy of one sink's spec, nil if none.
	Sink(name string) *confighubv1.Sink
	// SpecBytes is the size of all specs but except's.
	SpecBytes(except string) int
	// HasSink tells whether a sink runs (on a replica: here or elsewhere).
	HasSink(name string) bool
}

// Diagnostics answers GetConfig of a sink: what it last applied, or failed to apply.
type Diagnostics interface {
	LastApplied(sinkName string) (*config.Config, bool)
	LastFailed(sinkName string) (*config.Config, *sink.Error, bool)
}

// Ports are what the hub needs, by role (a test may leave out one it never uses).
type Ports struct {
	Publisher   Publisher
	Sinks       SinkAdmin
	Status      status.View
	Diagnostics Diagnostics
}

// Engine is every port at once, as engine.Engine offers them.
type Engine interface {
	Publisher
	SinkAdmin
	Diagnostics
	View() status.View
}

// PortsOf returns the ports of one engine (a replica replaces Status and Diagnostics).
func PortsOf(e Engine) Ports {
	return Ports{Publisher: e, Sinks: e, Status: e.View(), Diagnostics: e}
}
