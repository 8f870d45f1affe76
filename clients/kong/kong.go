package kong

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/kongapi"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/tlsconfig"
	"github.com/confighub/confighub/sink"
)

const (
	// Kind is the registered kind name.
	Kind = "kong"
	// DefaultStatusInterval is how often GET /status is polled by default.
	DefaultStatusInterval = 10 * time.Second
	// emptyHash is the configuration_hash of a DB-less Kong with no configuration.
	emptyHash      = "00000000000000000000000000000000"
	maxPollTimeout = 10 * time.Second
	maxAnswerBytes = 8 << 20  // read of an error body or /status
	maxDrain       = 64 << 20 // drained for connection reuse, else closed
)

// Register adds the "kong" kind to r.
func Register(r *sink.Registry) error {
	return r.Register(Kind, New, sink.AsGateway(), sink.WithSpec(func(s *confighubv1.Sink) bool { return s.GetKong() != nil }))
}

// Sink pushes configurations to one DB-less Kong gateway with POST /config.
type Sink struct {
	address  string
	http     *http.Client
	headers  http.Header
	interval time.Duration
	clock    clockwork.Clock
	logger   *slog.Logger

	fallback bool // on_reject: ON_REJECT_FALLBACK

	mu                 sync.Mutex
	held               []byte           // the body last accepted, whose versions a fallback keeps
	running            *runningFallback // the fallback held, nil for a whole generation
	appliedSinceResync bool             // an empty gateway after it means a restart
}

var (
	_ sink.Sink   = (*Sink)(nil)
	_ sink.Runner = (*Sink)(nil)
	_ sink.Closer = (*Sink)(nil)
)

// New is the factory of the "kong" kind.
func New(spec *confighubv1.Sink, deps sink.Deps) (sink.Sink, error) {
	ks := spec.GetKong()
	u, err := url.Parse(ks.GetAddress())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: sink %q: kong.address %q must be an http:// or https:// URL with a host", sink.ErrInvalidSpec, spec.GetName(), ks.GetAddress())
	}
	logger, clock := deps.Logger, deps.Clock
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	tlsCfg, err := tlsconfig.Build(ks.GetTls())
	if err != nil {
		return nil, fmt.Errorf("%w: sink %q: %w", sink.ErrInvalidSpec, spec.GetName(), err)
	}
	tlsconfig.WarnInsecure(logger, ks.GetTls(), ks.GetAddress())
	headers := http.Header{}
	for k, v := range ks.GetHeaders() {
		if k == "" || strings.ContainsAny(k, " \r\n:") || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("%w: sink %q: header %q is not a valid HTTP header", sink.ErrInvalidSpec, spec.GetName(), k)
		}
		headers.Set(k, v)
	}
	interval := DefaultStatusInterval
	if d := ks.GetStatusInterval().AsDuration(); d > 0 {
		interval = d
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	// A second idle connection would cost two goroutines and 8 KiB per gateway.
	tr.MaxIdleConnsPerHost = 1
	return &Sink{
		address: strings.TrimRight(u.String(), "/"), http: &http.Client{Transport: tr}, headers: headers,
		interval: interval, clock: clock, logger: logger,
		fallback: ks.GetOnReject() == confighubv1.OnReject_ON_REJECT_FALLBACK,
	}, nil
}

// Describe: a Kong gateway.
func (s *Sink) Describe() sink.Capabilities { return sink.Capabilities{Gateway: true} }

// Close releases idle connections.
func (s *Sink) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// Apply sends cfg.JSON() (shared by every sink) with POST /config.
func (s *Sink) Apply(ctx context.Context, cfg *config.Config) error {
	body, err := cfg.JSON()
	if err != nil {
		return &sink.Error{Code: sink.CodeInvalid, Permanent: true, Err: err,
			Message: fmt.Sprintf("generation %d cannot be converted to JSON: %v", cfg.Generation, err)}
	}
	s.mu.Lock()
	run := s.running
	s.mu.Unlock()
	if run != nil && run.forHash == cfg.Hash {
		// Resend this generation's fallback, not the whole it rejected.
		if err := s.post(ctx, run.body); err != nil {
			return err
		}
		s.accepted(run.body, run)
		return run.result
	}
	err = s.post(ctx, body)
	if err == nil {
		s.accepted(body, nil)
		return nil
	}
	se, ok := sink.AsError(err)
	if !s.fallback || !ok || se.Code != sink.CodeRejected || len(se.EntityErrors) == 0 {
		return err
	}
	return s.applyFallback(ctx, cfg, body, se)
}

func (s *Sink) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.address+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	maps.Copy(req.Header, s.headers)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return s.http.Do(req)
}

// closeBody drains an answer, bounded, so its connection is reused.
func closeBody(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}

func (s *Sink) post(ctx context.Context, body []byte) error {
	resp, err := s.do(ctx, http.MethodPost, "/config?check_hash=1&flatten_errors=1", body)
	if err != nil {
		return transportError(ctx, s.address, err)
	}
	defer closeBody(resp)
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return transportError(ctx, s.address, err)
	}
	return s.mapError(resp.StatusCode, raw, resp.Header.Get("Retry-After"), len(body))
}

func (s *Sink) accepted(body []byte, run *runningFallback) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appliedSinceResync = true
	if s.fallback {
		s.held = body
	}
	s.running = run
}

// mapError turns Kong's refusal of POST /config into a *sink.Error.
func (s *Sink) mapError(status int, raw []byte, retryAfter string, size int) error {
	kongMsg := kongMessage(raw)
	code, permanent := kongapi.Classify(status)
	e := &sink.Error{Code: code, Permanent: permanent, Body: raw,
		Message: fmt.Sprintf("gateway %s answered HTTP %d: %s", s.address, status, kongMsg)}
	switch code {
	case sink.CodeRejected:
		if status == http.StatusBadRequest {
			ents, msg := ParseFlattenedErrors(raw)
			e.EntityErrors = ents
			e.Message = fmt.Sprintf("gateway %s rejected the configuration (HTTP 400): %s", s.address, cmp.Or(msg, kongMsg))
		}
	case sink.CodeTooLarge:
		e.Message = fmt.Sprintf("the configuration body (%d bytes) is too large for the gateway %s (HTTP 413: %s); raise its nginx_admin_client_max_body_size or its LMDB map size", size, s.address, kongMsg)
	case sink.CodeRateLimited:
		e.RetryAfter = parseRetryAfter(retryAfter, s.clock.Now())
		e.Message = fmt.Sprintf("gateway %s is busy (HTTP 429: %s), Retry-After %q", s.address, kongMsg, retryAfter)
	case sink.CodeTimeout:
		e.Message = fmt.Sprintf("gateway %s timed out loading the configuration (HTTP %d: %s)", s.address, status, kongMsg)
	case sink.CodeUnauthorized:
		e.Message = fmt.Sprintf("gateway %s refused the credentials (HTTP %d: %s); check the Admin API token headers or client certificate", s.address, status, kongMsg)
	}
	return e
}

// transportError maps a failure without an HTTP answer.
func transportError(ctx context.Context, address string, err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return &sink.Error{Code: sink.CodeTimeout, Err: err,
			Message: fmt.Sprintf("gateway %s did not answer in time: %v", address, err)}
	case ctx.Err() != nil:
		return fmt.Errorf("push to gateway %s cancelled: %w", address, err)
	default:
		return &sink.Error{Code: sink.CodeUnavailable, Err: err,
			Message: fmt.Sprintf("gateway %s unreachable: %v", address, err)}
	}
}

// kongMessage is a Kong error body's "message", or the body trimmed.
func kongMessage(raw []byte) string {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Message != "" {
		return m.Message
	}
	t := bytes.TrimSpace(raw)
	s := string(t[:min(len(t), 200)])
	if len(t) > 200 {
		s += "..."
	}
	return cmp.Or(s, "no body")
}

// flattened is Kong's 400 body; flattened_errors is a list, or {} when empty (Kong 3.9).
type flattened struct {
	Message         string          `json:"message"`
	Fields          map[string]any  `json:"fields"`
	FlattenedErrors json.RawMessage `json:"flattened_errors"`
}

type flatEntity struct {
	EntityType string   `json:"entity_type"`
	EntityName string   `json:"entity_name"`
	EntityID   string   `json:"entity_id"`
	EntityTags []string `json:"entity_tags"`
	Errors     []struct {
		Type    string `json:"type"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// ParseFlattenedErrors reads a 400 body's flattened_errors and the reference
// errors nested in fields into entity errors, and returns Kong's message.
func ParseFlattenedErrors(raw []byte) ([]*confighubv1.EntityError, string) {
	var f flattened
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, ""
	}
	var list []flatEntity
	if t := bytes.TrimSpace(f.FlattenedErrors); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &list); err != nil {
			return nil, f.Message
		}
	}
	out := make([]*confighubv1.EntityError, 0, len(list))
	for _, fe := range list {
		ee := &confighubv1.EntityError{EntityType: fe.EntityType, EntityName: fe.EntityName, EntityId: fe.EntityID, EntityTags: fe.EntityTags}
		if redact.NameIsSecret(fe.EntityType) {
			ee.EntityName = "" // a key-auth credential is named by its key
		}
		for _, e := range fe.Errors {
			ee.Errors = append(ee.Errors, &confighubv1.FieldError{Type: e.Type, Field: e.Field, Message: e.Message})
		}
		out = append(out, ee)
	}
	if f.FlattenedErrors != nil {
		out = append(out, referenceErrors(f.Fields)...)
	}
	if len(out) == 0 {
		out = nil
	}
	return out, f.Message
}

// referenceErrors reads fields' {collection: {name or id: [messages]}} sections.
func referenceErrors(fields map[string]any) []*confighubv1.EntityError {
	var out []*confighubv1.EntityError
	for _, coll := range slices.Sorted(maps.Keys(fields)) {
		byKey, ok := fields[coll].(map[string]any)
		if !ok {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(byKey)) {
			msgs, ok := byKey[key].([]any)
			if !ok {
				continue
			}
			ee := &confighubv1.EntityError{EntityType: strings.TrimSuffix(coll, "s")}
			if uuidRE.MatchString(key) {
				ee.EntityId = key
			} else {
				ee.EntityName = key
			}
			for _, m := range msgs {
				if s, ok := m.(string); ok {
					ee.Errors = append(ee.Errors, &confighubv1.FieldError{Type: "entity", Message: s})
				}
			}
			if len(ee.Errors) > 0 {
				out = append(out, ee)
			}
		}
	}
	return out
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// parseRetryAfter reads Retry-After seconds or an HTTP date; 0 if neither.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Run polls GET /status: an empty hash after an apply (or at the first
// poll) means a restart, so it resyncs; every failed poll reports Health.
func (s *Sink) Run(ctx context.Context, n sink.Notifier) {
	t := s.clock.NewTicker(s.interval)
	defer t.Stop()
	lastHash, health := "", 0 // the previous poll's hash; health 1 reachable, -1 not, 0 unknown
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		pctx, cancel := context.WithTimeout(ctx, min(s.interval, maxPollTimeout))
		h, err := s.status(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if health != -1 {
				s.logger.Warn("gateway unreachable", "address", s.address, "err", err)
				health = -1
			}
			n.Health(fmt.Errorf("GET %s/status: %w", s.address, err))
			continue
		case health != 1:
			n.Health(nil)
			health = 1
		}
		if h == emptyHash {
			s.mu.Lock()
			applied := s.appliedSinceResync
			s.appliedSinceResync = false
			s.mu.Unlock()
			if lastHash != emptyHash || applied {
				s.logger.Info("gateway has no configuration (restarted); resync", "address", s.address)
				n.Resync("gateway restarted empty")
			}
		}
		lastHash = h
	}
}

func (s *Sink) status(ctx context.Context) (string, error) {
	resp, err := s.do(ctx, http.MethodGet, "/status", nil)
	if err != nil {
		return "", err
	}
	defer closeBody(resp)
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var st struct {
		Hash string `json:"configuration_hash"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&st)
	return st.Hash, err
}
