package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Policy is the role each gRPC method needs; OpenServices need none, others RoleAdmin.
var Policy = map[string]Role{
	"/confighub.v1.ConfigHubService/GetConfig":       RoleRead,
	"/confighub.v1.ConfigHubService/GetStatus":       RoleRead,
	"/confighub.v1.ConfigHubService/WatchStatus":     RoleRead,
	"/confighub.v1.ConfigHubService/ListGenerations": RoleRead,
	"/confighub.v1.ConfigHubService/DiffConfig":      RoleRead,
	"/confighub.v1.SinkAdminService/ListSinks":       RoleRead,
	"/confighub.v1.SinkAdminService/ListStreams":     RoleRead,
	"/confighub.v1.ConfigHubService/PushConfig":      RolePush,
	"/confighub.v1.ConfigHubService/UploadConfig":    RolePush,
	"/confighub.v1.ConfigHubService/RollbackConfig":  RolePush,
	"/confighub.v1.SinkAdminService/PutSink":         RoleAdmin,
	"/confighub.v1.SinkAdminService/DeleteSink":      RoleAdmin,
	"/confighub.v1.SinkAdminService/DeleteStream":    RoleAdmin,
}

// OpenServices need no token, so probes and `grpcurl list/describe` work.
var OpenServices = []string{
	"/grpc.health.v1.Health/",
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
}

// Required returns the role a method needs (RoleNone for an open one).
func Required(fullMethod string) Role {
	for _, p := range OpenServices {
		if strings.HasPrefix(fullMethod, p) {
			return RoleNone
		}
	}
	if r, ok := Policy[fullMethod]; ok {
		return r
	}
	return RoleAdmin
}

// Option configures an Authenticator.
type Option func(*Authenticator)

// WithLogger sets where reloads and denials are logged.
func WithLogger(l *slog.Logger) Option { return func(a *Authenticator) { a.log = l } }

// Authenticator checks bearer tokens against a reloadable token set.
type Authenticator struct {
	path   string
	log    *slog.Logger
	tokens atomic.Pointer[Tokens]
	reload sync.Mutex // serialises reloads (two SIGHUPs in a row)
}

// New returns an Authenticator with a fixed token set (tests, embedding).
func New(t *Tokens, opts ...Option) *Authenticator {
	a := &Authenticator{log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(a)
	}
	a.tokens.Store(t)
	return a
}

// NewFromFile loads path; Reload reads it again.
func NewFromFile(path string, opts ...Option) (*Authenticator, error) {
	a := New(nil, opts...)
	a.path = path
	if err := a.load("loaded"); err != nil {
		return nil, err
	}
	return a, nil
}

// load reads the token file into a, warning when the group may write or
// others access it (group read is how Kubernetes mounts a Secret).
func (a *Authenticator) load(verb string) error {
	t, err := LoadTokens(a.path)
	if err != nil {
		return err
	}
	a.tokens.Store(t)
	if fi, err := os.Stat(a.path); err == nil && fi.Mode().Perm()&0o027 != 0 {
		a.log.Warn("auth tokens file is writable by its group or open to others; chmod 600 (or 640) it", "file", a.path, "mode", fi.Mode().Perm().String())
	}
	a.log.Info("auth tokens "+verb, "file", a.path, "tokens", t.Len(), "roles", t.Counts())
	return nil
}

// Reload reads the token file again; on error the tokens in force stay.
func (a *Authenticator) Reload() error {
	a.reload.Lock()
	defer a.reload.Unlock()
	if a.path == "" {
		return errors.New("auth: no tokens file to reload")
	}
	err := a.load("reloaded")
	if err != nil {
		a.log.Error("auth tokens reload failed; keeping the previous tokens", "file", a.path, "error", err, "tokens_in_force", a.tokens.Load().Len())
	}
	return err
}

type principalKey struct{}

// Principal is the caller a token identified.
type Principal struct {
	Name string
	Role Role
}

// NewContext returns ctx carrying p as the caller (FromContext).
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the caller of an authorised call.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Sentinel errors of Check.
var (
	// ErrUnknownToken: no token, or one the file does not hold.
	ErrUnknownToken = errors.New("unknown token")
	// ErrPermissionDenied: the token's role is below the one needed.
	ErrPermissionDenied = errors.New("permission denied")
)

// Check looks token up and checks its role against need; errors wrap
// ErrUnknownToken or ErrPermissionDenied and never quote the token.
func (a *Authenticator) Check(token string, need Role) (Principal, error) {
	role, name := a.tokens.Load().Lookup(token)
	p := Principal{Name: name, Role: role}
	switch {
	case role == RoleNone:
		return Principal{}, ErrUnknownToken
	case role < need:
		return p, fmt.Errorf("%w: needs role %s; the token %q has role %s", ErrPermissionDenied, need, name, role)
	}
	return p, nil
}

// authorize is the grpcauth.AuthFunc: ctx's bearer token against its method's role.
func (a *Authenticator) authorize(ctx context.Context) (context.Context, error) {
	fullMethod, _ := grpc.Method(ctx)
	need := Required(fullMethod)
	if need == RoleNone {
		return ctx, nil
	}
	tok, err := grpcauth.AuthFromMD(ctx, "bearer")
	if err != nil {
		return nil, status.Errorf(codes.Unauthenticated, "%s needs a bearer token (metadata \"authorization: Bearer <token>\")", fullMethod)
	}
	p, err := a.Check(tok, need)
	switch {
	case errors.Is(err, ErrUnknownToken):
		a.log.Warn("rejected an unknown token", "method", fullMethod)
		return nil, status.Errorf(codes.Unauthenticated, "%s: unknown token", fullMethod)
	case err != nil:
		a.log.Warn("permission denied", "method", fullMethod, "token", p.Name, "role", p.Role.String(), "needs", need.String())
		return nil, status.Errorf(codes.PermissionDenied, "%s needs role %s; the token %q has role %s", fullMethod, need, p.Name, p.Role)
	}
	return NewContext(ctx, p), nil
}

// UnaryInterceptor enforces the policy on unary calls.
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return grpcauth.UnaryServerInterceptor(a.authorize)
}

// StreamInterceptor enforces the policy on streaming calls.
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return grpcauth.StreamServerInterceptor(a.authorize)
}
