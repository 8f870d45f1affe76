package sinkspec

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// Engine-wide defaults of sink options, after a kind's registered defaults.
const (
	DefaultTimeout           = 30 * time.Second
	DefaultBackoffInitial    = time.Second
	DefaultBackoffMax        = 5 * time.Minute
	DefaultBackoffMultiplier = 2.0
	DefaultBackoffJitter     = 0.2
)

// Checker normalises and validates sink specs against a registry of kinds.
type Checker struct{ reg *sink.Registry }

// New returns a Checker for the kinds of reg.
func New(reg *sink.Registry) *Checker { return &Checker{reg: reg} }

// Normalise returns a copy of spec, its kind resolved, its stream and the
// kind's defaults filled in, checked by the proto's, the cross-field and the
// kind's rules; errors wrap sink.ErrInvalidSpec or sink.ErrUnknownKind.
func (c *Checker) Normalise(spec *confighubv1.Sink) (*confighubv1.Sink, sink.Kind, error) {
	if spec == nil {
		return nil, sink.Kind{}, fmt.Errorf("%w: the sink is missing", sink.ErrInvalidSpec)
	}
	s := proto.Clone(spec).(*confighubv1.Sink)
	if s.GetName() == "" {
		return nil, sink.Kind{}, fmt.Errorf("%w: name is required", sink.ErrInvalidSpec)
	}
	if err := protovalidate.Validate(s); err != nil {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q: %w", sink.ErrInvalidSpec, s.GetName(), err)
	}
	kind := c.reg.KindOf(s)
	if kind == "" {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q has neither a kind nor a spec (%v)", sink.ErrInvalidSpec, s.GetName(), c.reg.Kinds())
	}
	if specKind := c.reg.SpecKind(s); specKind != "" && specKind != kind {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q has kind %q but a %s spec", sink.ErrInvalidSpec, s.GetName(), kind, specKind)
	}
	k, ok := c.reg.Lookup(kind)
	if !ok {
		return nil, sink.Kind{}, fmt.Errorf("sink %q: %w %q (registered kinds: %v)", s.GetName(), sink.ErrUnknownKind, kind, c.reg.Kinds())
	}
	if k.Owns != nil && !k.Owns(s) {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q of kind %s has no spec of its kind (e.g. kong: {address: ...})", sink.ErrInvalidSpec, s.GetName(), kind)
	}
	s.Kind = kind
	s.Stream = config.StreamName(s.GetStream())
	s.Options = mergeOptions(s.GetOptions(), k.Defaults)
	if _, err := Resolve(s); err != nil {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q: %w", sink.ErrInvalidSpec, s.GetName(), err)
	}
	if k.Validate != nil {
		if err := k.Validate(s); err != nil {
			if errors.Is(err, sink.ErrInvalidSpec) {
				return nil, sink.Kind{}, fmt.Errorf("sink %q: %w", s.GetName(), err)
			}
			return nil, sink.Kind{}, fmt.Errorf("%w: sink %q: %w", sink.ErrInvalidSpec, s.GetName(), err)
		}
	}
	return s, k, nil
}

// mergeOptions fills the unset fields of o from the kind's defaults d.
func mergeOptions(o, d *confighubv1.SinkOptions) *confighubv1.SinkOptions {
	if o == nil {
		o = &confighubv1.SinkOptions{}
	}
	if d != nil {
		fill(o.ProtoReflect(), d.ProtoReflect())
	}
	return o
}

// fill sets every field d sets and o does not to a copy of d's, message fields field by field.
func fill(o, d protoreflect.Message) {
	d.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		isMsg := fd.Message() != nil
		switch {
		case !o.Has(fd) && isMsg:
			o.Set(fd, protoreflect.ValueOfMessage(proto.Clone(v.Message().Interface()).ProtoReflect()))
		case !o.Has(fd):
			o.Set(fd, v)
		case isMsg && fd.Message().FullName() != "google.protobuf.Duration":
			fill(o.Mutable(fd).Message(), v.Message())
		}
		return true
	})
}

// Options are a sink's options with every default resolved.
type Options struct {
	Timeout        time.Duration
	MinInterval    time.Duration
	Debounce       time.Duration
	MaxDelay       time.Duration
	Wave           uint32
	WaveMinApplied uint32
	Gate           confighubv1.Gate
	CancelInFlight bool
	Backoff        Backoff
}

// Backoff is the retry schedule after failures.
type Backoff struct {
	Initial, Max time.Duration
	Multiplier   float64
	Jitter       float64
}

// Resolve fills the engine defaults into the options of a proto-valid spec and checks the rules that span fields.
func Resolve(s *confighubv1.Sink) (Options, error) {
	o := s.GetOptions()
	b := o.GetBackoff()
	r := Options{
		Timeout:        orDefault(o.GetTimeout(), DefaultTimeout),
		MinInterval:    orDefault(o.GetMinInterval(), 0),
		Debounce:       orDefault(o.GetDebounce(), 0),
		MaxDelay:       orDefault(o.GetMaxDelay(), 0),
		Wave:           o.GetWave(),
		WaveMinApplied: o.GetWaveMinApplied(),
		Gate:           cmp.Or(o.GetGate(), confighubv1.Gate_GATE_WAVE),
		CancelInFlight: o.GetCancelInFlight(),
		Backoff: Backoff{
			Initial:    orDefault(b.GetInitial(), DefaultBackoffInitial),
			Max:        orDefault(b.GetMax(), DefaultBackoffMax),
			Multiplier: cmp.Or(b.GetMultiplier(), DefaultBackoffMultiplier),
			Jitter:     cmp.Or(b.GetJitter(), DefaultBackoffJitter),
		},
	}
	switch {
	case r.MaxDelay > 0 && r.Debounce == 0:
		return r, errors.New("options.max_delay needs options.debounce")
	case r.MaxDelay > 0 && r.MaxDelay < r.Debounce:
		return r, fmt.Errorf("options.max_delay (%s) must be at least options.debounce (%s)", r.MaxDelay, r.Debounce)
	case r.Backoff.Max < r.Backoff.Initial:
		return r, fmt.Errorf("options.backoff.max (%s) must be at least backoff.initial (%s)", r.Backoff.Max, r.Backoff.Initial)
	}
	return r, nil
}

func orDefault(d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.AsDuration()
}

// Delay is the wait after the n-th consecutive failure (n >= 1); rnd is uniform in [0,1).
func (b Backoff) Delay(n int, rnd float64) time.Duration {
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	d = min(d, float64(b.Max))
	d *= 1 + b.Jitter*(2*rnd-1)
	return min(time.Duration(d), b.Max)
}
