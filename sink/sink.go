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

// Sink is one destination. Apply makes it hold cfg (nil: applied) and must
// return once ctx ends: delete, replace and Stop wait for it.
type Sink interface {
	Apply(ctx context.Context, cfg *config.Config) error
	Describe() Capabilities
}

// Capabilities describe a sink to the engine.
type Capabilities struct {
	Gateway     bool // counts for GATE_ANY_GATEWAY, runs in the gateway apply pool
	NoApplySlot bool // an apply holds no hub resource: no slot of the apply limit
}

// Runner is a sink with background work, run until the sink is deleted or the hub stops.
type Runner interface {
	Run(ctx context.Context, n Notifier)
}

// Notifier lets a Runner talk to the engine.
type Notifier interface {
	// Resync applies the current generation again (the gateway restarted empty).
	Resync(reason string)
	// Health reports reachability; nil means reachable.
	Health(err error)
	// DataPlane reports a hybrid data plane's status; dp is not changed afterwards.
	DataPlane(dp *confighubv1.DataPlaneStatus)
}

// Closer is a sink whose resources are released when it is deleted or replaced.
type Closer interface{ Close() error }

// Deps are what a factory may use; Logger (maybe nil) names the sink already.
type Deps struct {
	Logger *slog.Logger
	Clock  clockwork.Clock
}

// Factory builds a sink from its proto-validated spec, without network I/O.
type Factory func(spec *confighubv1.Sink, deps Deps) (Sink, error)

// Kind is a registered sink kind.
type Kind struct {
	Name     string
	Factory  Factory
	Defaults *confighubv1.SinkOptions           // fill unset options
	Validate func(spec *confighubv1.Sink) error // optional, after defaults
	Owns     func(spec *confighubv1.Sink) bool  // optional: spec sets the kind's oneof member
	Gateway  bool                               // every sink of the kind is a gateway
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
func WithDefaults(o *confighubv1.SinkOptions) RegisterOption { return func(k *Kind) { k.Defaults = o } }

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

// KindOf returns a spec's kind field, or else its SpecKind.
func (r *Registry) KindOf(s *confighubv1.Sink) string {
	if s.GetKind() != "" {
		return s.GetKind()
	}
	return r.SpecKind(s)
}

// SpecKind returns the registered kind that owns s's spec, or "".
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
	Code         Code
	Message      string
	Permanent    bool // not retried until a new generation
	RetryAfter   time.Duration
	EntityErrors []*confighubv1.EntityError
	Body         []byte // the destination's raw answer
	Err          error
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
func AsError(err error) (*Error, bool) { return errors.AsType[*Error](err) }

// Permanent marks err as a rejection of the configuration.
func Permanent(code Code, err error) error {
	return &Error{Code: code, Permanent: true, Err: err}
}

// RetryAfter marks err as retryable no sooner than d.
func RetryAfter(d time.Duration, err error) error {
	return &Error{Code: CodeRateLimited, RetryAfter: d, Err: err}
}

// Degraded is what Apply returns when the destination rejected cfg whole
// and holds a fallback without the Excluded entities (ON_REJECT_FALLBACK);
// not retried until a new generation or a resync.
type Degraded struct {
	Hash      string // of the fallback
	Excluded  []*confighubv1.ExcludedEntity
	Rejection *Error
}

func (d *Degraded) Error() string {
	return fmt.Sprintf("applied a fallback without %d entities: %v", len(d.Excluded), d.Rejection)
}

// AsDegraded returns the *Degraded in err's chain, if any.
func AsDegraded(err error) (*Degraded, bool) { return errors.AsType[*Degraded](err) }
