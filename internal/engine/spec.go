package engine

import (
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/sinkspec"
	"github.com/confighub/confighub/sink"
)

// ValidateSink returns a normalised copy of spec (see sinkspec.Checker):
// kind filled, stream defaulted, the kind's defaults applied to unset
// options. Errors wrap sink.ErrUnknownKind or sink.ErrInvalidSpec and name
// the problem. It does not build the sink.
func (e *Engine) ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error) {
	s, _, err := e.specs.Normalise(spec)
	return s, err
}

// validate is ValidateSink with the kind and the resolved options.
func (e *Engine) validate(spec *confighubv1.Sink) (*confighubv1.Sink, sink.Kind, sinkspec.Options, error) {
	s, k, err := e.specs.Normalise(spec)
	if err != nil {
		return nil, sink.Kind{}, sinkspec.Options{}, err
	}
	opts, err := sinkspec.Resolve(s)
	return s, k, opts, err
}
