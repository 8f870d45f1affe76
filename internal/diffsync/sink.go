package diffsync

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/kong/go-kong/kong"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

// ClientOptions describe the HTTP side of a destination.
type ClientOptions struct {
	BaseURL   string                 // the Admin API root (for Konnect, the control plane's)
	TLS       *tls.Config            // nil: defaults
	Headers   map[string]string      // set on every request (e.g. Kong-Admin-Token)
	Auth      func() (string, error) // each request's Authorization header, if set
	MaxConns  int                    // bounds connections to the destination (the concurrency)
	Workspace string                 // a Kong Enterprise workspace; "" for the default
}

// NewClient returns a go-kong client for o and the transport to close with the sink.
func NewClient(o ClientOptions) (*kong.Client, *http.Transport, error) {
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, fmt.Errorf("address %q must be an http or https URL with a host", o.BaseURL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = o.TLS
	tr.MaxIdleConnsPerHost = max(o.MaxConns, 2)
	tr.MaxConnsPerHost = max(o.MaxConns, 1) + 2 // + the dump's parallel listing
	tr.ResponseHeaderTimeout = 0
	var rt http.RoundTripper = tr
	if len(o.Headers) > 0 || o.Auth != nil {
		h := http.Header{}
		for k, v := range o.Headers {
			if k == "" {
				return nil, nil, fmt.Errorf("a header has an empty name")
			}
			h.Set(k, v)
		}
		rt = &headerTransport{base: tr, headers: h, auth: o.Auth}
	}
	c, err := kong.NewClient(kong.String(o.BaseURL), &http.Client{Transport: rt})
	if err != nil {
		return nil, nil, fmt.Errorf("admin API client: %w", err)
	}
	if o.Workspace != "" {
		c.SetWorkspace(o.Workspace)
	}
	return c, tr, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	auth    func() (string, error)
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	if t.auth != nil {
		a, err := t.auth()
		if err != nil {
			if r.Body != nil {
				_ = r.Body.Close()
			}
			return nil, err
		}
		r.Header.Set("Authorization", a)
	}
	return t.base.RoundTrip(r)
}

// Sink is a sink.Sink that applies configurations with a Syncer.
type Sink struct {
	syncer *Syncer
	caps   sink.Capabilities
	tr     *http.Transport
	logger *slog.Logger
	clock  func() time.Time
	before func() error
}

var (
	_ sink.Sink   = (*Sink)(nil)
	_ sink.Closer = (*Sink)(nil)
)

// NewSink wraps syncer; Close closes tr (may be nil); before (if set) runs before each apply.
func NewSink(syncer *Syncer, caps sink.Capabilities, tr *http.Transport, deps sink.Deps, before func() error) *Sink {
	s := &Sink{syncer: syncer, caps: caps, tr: tr, logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)), clock: time.Now, before: before}
	if deps.Clock != nil {
		s.clock = deps.Clock.Now
	}
	return s
}

// Describe returns the capabilities given to NewSink.
func (s *Sink) Describe() sink.Capabilities { return s.caps }

// Apply syncs cfg.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	if s.before != nil {
		if err := s.before(); err != nil {
			return &sink.Error{Code: sink.CodeUnauthorized, Message: err.Error(), Err: err}
		}
	}
	start := s.clock()
	res, err := s.syncer.Sync(ctx, cfg)
	s.logger.Debug("entity sync", "generation", cfg.Generation, "created", res.Created,
		"updated", res.Updated, "deleted", res.Deleted, "took", s.clock().Sub(start), "error", err)
	return err
}

// Close releases idle connections.
func (s *Sink) Close() error {
	if s.tr != nil {
		s.tr.CloseIdleConnections()
	}
	return nil
}
