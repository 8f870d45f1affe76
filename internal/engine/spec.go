package engine

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// Engine-wide defaults of sink options (a kind's registered defaults come
// first).
const (
	DefaultTimeout           = 30 * time.Second
	DefaultBackoffInitial    = time.Second
	DefaultBackoffMax        = 5 * time.Minute
	DefaultBackoffMultiplier = 2.0
	DefaultBackoffJitter     = 0.2
	maxWave                  = 100
)

var (
	sinkNameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	streamNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// ValidateSink returns a normalised copy of spec: kind filled, stream
// defaulted to "default", the kind's registered defaults applied to unset
// options. Errors wrap sink.ErrUnknownKind or sink.ErrInvalidSpec and name
// the problem. It does not build the sink.
func (e *Engine) ValidateSink(spec *confighubv1.Sink) (*confighubv1.Sink, error) {
	s, _, err := e.validate(spec)
	return s, err
}

func (e *Engine) validate(spec *confighubv1.Sink) (*confighubv1.Sink, sink.Kind, error) {
	if spec == nil {
		return nil, sink.Kind{}, fmt.Errorf("%w: the sink is missing", sink.ErrInvalidSpec)
	}
	s := proto.Clone(spec).(*confighubv1.Sink)
	if s.GetName() == "" {
		return nil, sink.Kind{}, fmt.Errorf("%w: name is required", sink.ErrInvalidSpec)
	}
	if len(s.GetName()) > 128 || !sinkNameRE.MatchString(s.GetName()) {
		return nil, sink.Kind{}, fmt.Errorf("%w: name %q must be 1-128 characters of letters, digits, '.', '_', '-', starting with a letter or digit", sink.ErrInvalidSpec, s.GetName())
	}
	kind := sink.KindOf(s)
	if kind == "" {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q has neither a kind nor a spec (kong, kong_db, konnect, file, plugin)", sink.ErrInvalidSpec, s.GetName())
	}
	if specKind := sink.SpecKind(s); specKind != "" && specKind != kind {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q has kind %q but a %s spec", sink.ErrInvalidSpec, s.GetName(), kind, specKind)
	}
	k, ok := e.reg.Lookup(kind)
	if !ok {
		return nil, sink.Kind{}, fmt.Errorf("sink %q: %w %q (registered kinds: %v)", s.GetName(), sink.ErrUnknownKind, kind, e.reg.Kinds())
	}
	s.Kind = kind
	if s.GetStream() == "" {
		s.Stream = config.DefaultStream
	}
	if len(s.GetStream()) > 63 || !streamNameRE.MatchString(s.GetStream()) {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q: stream %q must be up to 63 lower-case letters, digits, '.', '_', '-'", sink.ErrInvalidSpec, s.GetName(), s.GetStream())
	}
	s.Options = mergeOptions(s.GetOptions(), k.Defaults)
	if _, err := resolve(s); err != nil {
		return nil, sink.Kind{}, fmt.Errorf("%w: sink %q: %v", sink.ErrInvalidSpec, s.GetName(), err)
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
	if d == nil {
		return o
	}
	if o.Timeout == nil && d.Timeout != nil {
		o.Timeout = durationpb.New(d.Timeout.AsDuration())
	}
	if o.MinInterval == nil && d.MinInterval != nil {
		o.MinInterval = durationpb.New(d.MinInterval.AsDuration())
	}
	if o.Debounce == nil && d.Debounce != nil {
		o.Debounce = durationpb.New(d.Debounce.AsDuration())
	}
	if o.MaxDelay == nil && d.MaxDelay != nil {
		o.MaxDelay = durationpb.New(d.MaxDelay.AsDuration())
	}
	if o.Wave == 0 {
		o.Wave = d.Wave
	}
	if o.Gate == confighubv1.Gate_GATE_UNSPECIFIED {
		o.Gate = d.Gate
	}
	if !o.CancelInFlight {
		o.CancelInFlight = d.CancelInFlight
	}
	if o.WaveMinApplied == 0 {
		o.WaveMinApplied = d.WaveMinApplied
	}
	if db := d.GetBackoff(); db != nil {
		if o.Backoff == nil {
			o.Backoff = &confighubv1.BackoffOptions{}
		}
		b := o.Backoff
		if b.Initial == nil && db.Initial != nil {
			b.Initial = durationpb.New(db.Initial.AsDuration())
		}
		if b.Max == nil && db.Max != nil {
			b.Max = durationpb.New(db.Max.AsDuration())
		}
		if b.Multiplier == 0 {
			b.Multiplier = db.Multiplier
		}
		if b.Jitter == 0 {
			b.Jitter = db.Jitter
		}
	}
	return o
}

// options are a sink's options with every default resolved.
type options struct {
	timeout        time.Duration
	minInterval    time.Duration
	debounce       time.Duration
	maxDelay       time.Duration
	wave           uint32
	waveMinApplied uint32
	gate           confighubv1.Gate
	cancelInFlight bool
	backoff        backoff
}

type backoff struct {
	initial, max time.Duration
	multiplier   float64
	jitter       float64
}

func duration(name string, d *durationpb.Duration, def, least time.Duration) (time.Duration, error) {
	if d == nil {
		return def, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, fmt.Errorf("options.%s: %v", name, err)
	}
	v := d.AsDuration()
	if v < least {
		return 0, fmt.Errorf("options.%s is %s, must be at least %s", name, v, least)
	}
	return v, nil
}

// resolve checks the options of a normalised spec and fills the engine
// defaults.
func resolve(s *confighubv1.Sink) (options, error) {
	o := s.GetOptions()
	var r options
	var err error
	if r.timeout, err = duration("timeout", o.GetTimeout(), DefaultTimeout, time.Millisecond); err != nil {
		return r, err
	}
	if r.minInterval, err = duration("min_interval", o.GetMinInterval(), 0, 0); err != nil {
		return r, err
	}
	if r.debounce, err = duration("debounce", o.GetDebounce(), 0, 0); err != nil {
		return r, err
	}
	if r.maxDelay, err = duration("max_delay", o.GetMaxDelay(), 0, 0); err != nil {
		return r, err
	}
	if r.maxDelay > 0 && r.debounce == 0 {
		return r, errors.New("options.max_delay needs options.debounce")
	}
	if r.maxDelay > 0 && r.maxDelay < r.debounce {
		return r, fmt.Errorf("options.max_delay (%s) must be at least options.debounce (%s)", r.maxDelay, r.debounce)
	}
	r.wave = o.GetWave()
	if r.wave > maxWave {
		return r, fmt.Errorf("options.wave is %d, must be at most %d", r.wave, maxWave)
	}
	r.waveMinApplied = o.GetWaveMinApplied()
	r.gate = o.GetGate()
	if _, ok := confighubv1.Gate_name[int32(r.gate)]; !ok {
		return r, fmt.Errorf("options.gate %d is not a known gate", r.gate)
	}
	if r.gate == confighubv1.Gate_GATE_UNSPECIFIED {
		r.gate = confighubv1.Gate_GATE_WAVE
	}
	r.cancelInFlight = o.GetCancelInFlight()
	b := o.GetBackoff()
	if r.backoff.initial, err = duration("backoff.initial", b.GetInitial(), DefaultBackoffInitial, time.Millisecond); err != nil {
		return r, err
	}
	if r.backoff.max, err = duration("backoff.max", b.GetMax(), DefaultBackoffMax, time.Millisecond); err != nil {
		return r, err
	}
	if r.backoff.max < r.backoff.initial {
		return r, fmt.Errorf("options.backoff.max (%s) must be at least backoff.initial (%s)", r.backoff.max, r.backoff.initial)
	}
	r.backoff.multiplier = b.GetMultiplier()
	switch {
	case r.backoff.multiplier == 0:
		r.backoff.multiplier = DefaultBackoffMultiplier
	case r.backoff.multiplier < 1 || r.backoff.multiplier > 100:
		return r, fmt.Errorf("options.backoff.multiplier is %g, must be between 1 and 100", r.backoff.multiplier)
	}
	r.backoff.jitter = b.GetJitter()
	switch {
	case r.backoff.jitter == 0:
		r.backoff.jitter = DefaultBackoffJitter
	case r.backoff.jitter < 0 || r.backoff.jitter > 1:
		return r, fmt.Errorf("options.backoff.jitter is %g, must be between 0 and 1", r.backoff.jitter)
	}
	return r, nil
}

// delay is the wait after the n-th consecutive failure (n >= 1); rnd is
// uniform in [0,1).
func (b backoff) delay(n int, rnd float64) time.Duration {
	d := float64(b.initial)
	for i := 1; i < n && d < float64(b.max); i++ {
		d *= b.multiplier
	}
	d = min(d, float64(b.max))
	d *= 1 + b.jitter*(2*rnd-1)
	return min(time.Duration(d), b.max)
}
