package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
)

// Sink is one destination (the package doc says what the engine
// guarantees it). Apply must return once its ctx ends: a sink that ignores
// ctx keeps its worker and an apply slot busy, and DeleteSink, PutSink of
// its name and Stop wait for it.
type Sink interface {
	// Apply makes the destination hold cfg. Returning nil means applied.
	Apply(ctx context.Context, cfg *config.Config) error
	// Describe states the sink's capabilities.
	Describe() Capabilities
}

// Capabilities describe a sink to the engine: only what the engine reads
// (a sink's own limits are its to enforce in Apply).
type Capabilities struct {
	// Gateway marks a Kong gateway: it counts for GATE_ANY_GATEWAY and runs
	// in the gateway apply pool.
	Gateway bool
	// NoApplySlot: an apply holds no resource of the hub while it lasts (a
	// hybrid data plane is written a shared frame, then awaited), so it
	// takes no slot of the hub-wide limit of applies in flight.
	NoApplySlot bool
}

// Runner is a sink with background work (the kong sink's GET /status
// poll): the engine runs Run in a goroutine of its own and cancels ctx when
// the sink is deleted or the hub stops.
type Runner interface {
	Run(ctx context.Context, n Notifier)
}

// Notifier lets a Runner talk to the engine.
type Notifier interface {
	// Resync asks the engine to apply the current generation again, even if
	// its hash was applied (e.g. the gateway restarted empty).
	Resync(reason string)
	// Health reports the destination's reachability as seen by the runner;
	// err == nil means reachable.
	Health(err error)
	// DataPlane reports what a destination that connects to the hub (a
	// hybrid data plane) shows of itself, status's data_plane: a new
	// message each time, not changed afterwards.
	DataPlane(dp *confighubv1.DataPlaneStatus)
}

// Closer is a sink holding resources (connections) released when it is
// deleted or replaced.
type Closer interface {
	Close() error
}

// Deps are what a factory may use; pass them on, never use globals.
type Deps struct {
	// Logger names the sink and its kind already: a sink adds only
	// attributes of its own. May be nil.
	Logger *slog.Logger
	Clock  clockwork.Clock
}

// Factory builds a sink from its spec, checked against the proto's rules
// already: it validates the rest and returns an error that names the
// problem, without network I/O (the engine calls it on PutSink).
type Factory func(spec *confighubv1.Sink, deps Deps) (Sink, error)

// Kind is a registered sink kind.
type Kind struct {
	Name    string
	Factory Factory
	// Defaults fill unset options (konnect's min_interval of 30s).
	Defaults *confighubv1.SinkOptions
	// Validate checks the options after defaults. Optional.
	Validate func(spec *confighubv1.Sink) error
	// Owns reports whether a spec carries this kind's settings (its oneof
	// member): a spec without a kind gets the kind that owns it, and a spec
	// of the kind needs them. Optional.
	Owns func(spec *confighubv1.Sink) bool
	// Gateway says every sink of the kind is a gateway before one is built
	// (a replica evaluates GATE_ANY_GATEWAY over other replicas' sinks).
	Gateway bool
}

// Registry maps kind names to factories; make it with NewRegistry.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]Kind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]Kind{}} }

// Register adds a kind. Registering a name twice is an error.
func (r *Registry) Register(kind string, f Factory, opts ...RegisterOption) error {
	if kind == "" || f == nil {
		return errors.New("sink: Register needs a kind name and a factory")
	}
	k := Kind{Name: kind, Factory: f}
	for _, o := range opts {
		o(&k)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[kind]; ok {
		return fmt.Errorf("sink: kind %q is already registered", kind)
	}
	r.kinds[kind] = k
	return nil
}

// RegisterOption configures a kind at registration.
type RegisterOption func(*Kind)

// WithDefaults sets the options a sink of this kind gets when unset.
func WithDefaults(o *confighubv1.SinkOptions) RegisterOption {
	return func(k *Kind) { k.Defaults = o }
}

// WithValidate sets an extra check of a sink spec of this kind.
func WithValidate(v func(*confighubv1.Sink) error) RegisterOption {
	return func(k *Kind) { k.Validate = v }
}

// WithSpec names the spec oneof member the kind owns (see Kind.Owns).
func WithSpec(owns func(*confighubv1.Sink) bool) RegisterOption {
	return func(k *Kind) { k.Owns = owns }
}

// AsGateway marks the kind's sinks as gateways (see Kind.Gateway).
func AsGateway() RegisterOption { return func(k *Kind) { k.Gateway = true } }

// Lookup returns a registered kind.
func (r *Registry) Lookup(kind string) (Kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[kind]
	return k, ok
}

// Kinds lists the registered kind names, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.kinds))
}

// KindOf returns the kind of a spec: its kind field, or the registered kind
// whose spec is set.
func (r *Registry) KindOf(s *confighubv1.Sink) string {
	if s.GetKind() != "" {
		return s.GetKind()
	}
	return r.SpecKind(s)
}

// SpecKind returns the registered kind that owns the spec set in s (see
// WithSpec), or "" when none does.
func (r *Registry) SpecKind(s *confighubv1.Sink) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name, k := range r.kinds {
		if k.Owns != nil && k.Owns(s) {
			return name
		}
	}
	return ""
}

// ErrUnknownKind is returned for a spec whose kind is not registered.
var ErrUnknownKind = errors.New("unknown sink kind")

// ErrInvalidSpec wraps every spec validation error.
var ErrInvalidSpec = errors.New("invalid sink spec")

// Error tells the engine how to treat a failed apply.
type Error struct {
	// Code is one of the closed set (codes.go).
	Code    Code
	Message string
	// Permanent: the destination rejected this configuration; do not retry
	// it until a new generation.
	Permanent bool
	// RetryAfter: the destination asked to wait at least this long.
	RetryAfter time.Duration
	// EntityErrors are per-entity errors (Kong's flattened errors).
	EntityErrors []*confighubv1.EntityError
	// Body is the raw answer of the destination, kept for diagnostics.
	Body []byte
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Code != "" {
		return string(e.Code) + ": " + msg
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Permanent marks err as a rejection of the configuration.
func Permanent(code Code, err error) error {
	return &Error{Code: code, Permanent: true, Err: err}
}

// RetryAfter marks err as retryable no sooner than d.
func RetryAfter(d time.Duration, err error) error {
	return &Error{Code: CodeRateLimited, RetryAfter: d, Err: err}
}

// Degraded is what Apply returns when the destination rejected cfg whole
// and holds a fallback of it (cfg without some entities, on_reject:
// ON_REJECT_FALLBACK): the sink is DEGRADED, the generation not applied nor
// retried until a new generation or a resync. AsError does not match it.
type Degraded struct {
	// Hash identifies the fallback configuration the destination holds.
	Hash string
	// Excluded are the entities left out or held at their previous version.
	Excluded []*confighubv1.ExcludedEntity
	// Rejection is the destination's refusal of cfg whole.
	Rejection *Error
}

func (d *Degraded) Error() string {
	return fmt.Sprintf("applied a fallback without %d entities: %v", len(d.Excluded), d.Rejection)
}

// AsDegraded returns the *Degraded in err's chain, if any.
func AsDegraded(err error) (*Degraded, bool) {
	var d *Degraded
	if errors.As(err, &d) {
		return d, true
	}
	return nil, false
}
