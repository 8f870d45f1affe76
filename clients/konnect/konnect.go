package konnect

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/diffsync"
	"github.com/confighub/confighub/internal/tlsconfig"
	"github.com/confighub/confighub/sink"
)

// Kind is the registered kind name.
const Kind = "konnect"

const (
	// DefaultAddress is Konnect's US region KIC API.
	DefaultAddress = "https://us.kic.api.konghq.com"
	// DefaultConcurrency is KIC's concurrency for Konnect.
	DefaultConcurrency = 4
	// DefaultMinInterval is KIC's Konnect upload period.
	DefaultMinInterval = 30 * time.Second
	// LowestMinInterval is the lowest min_interval accepted.
	LowestMinInterval = 10 * time.Second
	// DefaultTimeout bounds one sync.
	DefaultTimeout = 120 * time.Second
	// PathPrefix leads to a control plane's Admin API.
	PathPrefix = "/kic/api/control-planes/"
)

// Register adds the "konnect" kind to r.
func Register(r *sink.Registry) error {
	return r.Register(Kind, New,
		sink.WithDefaults(&confighubv1.SinkOptions{
			MinInterval: durationpb.New(DefaultMinInterval),
			Gate:        confighubv1.Gate_GATE_ANY_GATEWAY,
			Timeout:     durationpb.New(DefaultTimeout),
		}),
		sink.WithValidate(Validate),
		sink.WithSpec(func(s *confighubv1.Sink) bool { return s.GetKonnect() != nil }))
}

// Validate rejects a min_interval below LowestMinInterval.
func Validate(spec *confighubv1.Sink) error {
	if mi := spec.GetOptions().GetMinInterval(); mi != nil && mi.AsDuration() < LowestMinInterval {
		return fmt.Errorf("%w: sink %q: konnect min_interval %v is below the lowest accepted, %v",
			sink.ErrInvalidSpec, spec.GetName(), mi.AsDuration(), LowestMinInterval)
	}
	return nil
}

// BaseURL is the Admin API root of a control plane.
func BaseURL(address, controlPlaneID string) string {
	if address == "" {
		address = DefaultAddress
	}
	return strings.TrimRight(address, "/") + PathPrefix + url.PathEscape(controlPlaneID)
}

// New is the factory of the "konnect" kind.
func New(spec *confighubv1.Sink, deps sink.Deps) (sink.Sink, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: sink %q: konnect: %s", sink.ErrInvalidSpec, spec.GetName(), fmt.Sprintf(format, a...))
	}
	ks := spec.GetKonnect()
	cp := ks.GetControlPlaneId()
	if cp == "" || strings.ContainsAny(cp, "/?# ") {
		return nil, bad("control_plane_id %q must be a non-empty ID without '/', '?', '#' or spaces", cp)
	}
	if err := Validate(spec); err != nil {
		return nil, err
	}
	tlsCfg, err := tlsconfig.Build(ks.GetTls())
	if err != nil {
		return nil, bad("tls: %v", err)
	}
	if ks.GetToken() != "" && ks.GetTokenFile() != "" {
		return nil, bad("set token or token_file, not both")
	}
	tok := &token{file: ks.GetTokenFile()}
	tok.value.Store(new(ks.GetToken()))
	if tok.file != "" {
		if err := tok.reload(); err != nil {
			return nil, bad("%v", err)
		}
	}
	if (tlsCfg == nil || len(tlsCfg.Certificates) == 0) && *tok.value.Load() == "" {
		return nil, bad("needs a client certificate (tls.cert_pem/key_pem or cert_file/key_file) or a token (token or token_file)")
	}
	conc := cmp.Or(int(ks.GetConcurrency()), DefaultConcurrency)
	opts := diffsync.ClientOptions{BaseURL: BaseURL(ks.GetAddress(), cp), TLS: tlsCfg, MaxConns: conc}
	if *tok.value.Load() != "" {
		opts.Auth = tok.header
	}
	client, tr, err := diffsync.NewClient(opts)
	if err != nil {
		return nil, bad("%v", err)
	}
	logger := deps.Logger
	if logger != nil {
		logger = logger.With("control_plane", cp)
	}
	tlsconfig.WarnInsecure(logger, ks.GetTls(), opts.BaseURL)
	syncer := diffsync.New(client, diffsync.Options{ControlPlane: cp, Concurrency: conc, DropConsumers: ks.GetDropConsumers(), Logger: logger})
	var before func() error
	if tok.file != "" {
		before = tok.reload
	}
	deps.Logger = logger
	return diffsync.NewSink(syncer, sink.Capabilities{}, tr, deps, before), nil
}

// token is a bearer token, inline or from a file re-read before each apply.
type token struct {
	file  string
	value atomic.Pointer[string]
}

func (t *token) reload() error {
	b, err := os.ReadFile(t.file)
	if err != nil {
		return fmt.Errorf("reading token_file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return errors.New("token_file is empty")
	}
	t.value.Store(&v)
	return nil
}

func (t *token) header() (string, error) { return "Bearer " + *t.value.Load(), nil }
