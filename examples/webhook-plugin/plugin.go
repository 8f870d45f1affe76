package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
)

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>".
const SignatureHeader = "X-Confighub-Signature"

// Options configure the plugin.
type Options struct {
	URL      string
	Headers  map[string]string
	Secret   []byte
	MaxBytes uint64
	Timeout  time.Duration
	Client   *http.Client
	Logger   *slog.Logger
}

// Plugin forwards each configuration to a webhook.
type Plugin struct {
	sinkv1.UnimplementedSinkPluginServiceServer
	o Options
}

var _ sinkv1.SinkPluginServiceServer = (*Plugin)(nil)

// NewPlugin checks o and returns the plugin.
func NewPlugin(o Options) (*Plugin, error) {
	if !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://") {
		return nil, fmt.Errorf("webhook URL %q must start with http:// or https://", o.URL)
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return &Plugin{o: o}, nil
}

// Describe: the webhook takes JSON or YAML as pushed, in 1 MiB chunks.
func (p *Plugin) Describe(context.Context, *sinkv1.DescribeRequest) (*sinkv1.DescribeResponse, error) {
	return &sinkv1.DescribeResponse{
		Name: "webhook", Version: "0.1.0",
		Formats:        []sinkv1.Format{sinkv1.Format_FORMAT_JSON, sinkv1.Format_FORMAT_YAML},
		MaxConfigBytes: p.o.MaxBytes,
	}, nil
}

// Apply reassembles the configuration and posts it to the webhook.
func (p *Plugin) Apply(st grpc.ClientStreamingServer[sinkv1.ApplyRequest, sinkv1.ApplyResponse]) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "the first message of Apply must be a header")
	}
	if p.o.MaxBytes > 0 && h.GetTotalSize() > p.o.MaxBytes {
		return st.SendAndClose(&sinkv1.ApplyResponse{Permanent: true, Code: "too-large",
			Message: fmt.Sprintf("%d bytes is over this plugin's limit of %d", h.GetTotalSize(), p.o.MaxBytes)})
	}
	body := make([]byte, 0, min(h.GetTotalSize(), 64<<20))
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		body = append(body, m.GetChunk()...)
		if uint64(len(body)) > h.GetTotalSize() {
			return status.Errorf(codes.InvalidArgument, "more bytes than the header's total_size %d", h.GetTotalSize())
		}
	}
	if uint64(len(body)) != h.GetTotalSize() {
		return status.Errorf(codes.InvalidArgument, "got %d bytes, the header said %d", len(body), h.GetTotalSize())
	}
	resp := p.forward(st.Context(), h, body)
	log := p.o.Logger.With("sink", h.GetSink(), "stream", h.GetStream(), "generation", h.GetGeneration())
	if resp.GetApplied() {
		log.Info("delivered", "bytes", len(body))
	} else {
		log.Warn("not delivered", "code", resp.GetCode(), "message", resp.GetMessage(), "permanent", resp.GetPermanent())
	}
	return st.SendAndClose(resp)
}

// Sign returns the signature header value of body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (p *Plugin) forward(ctx context.Context, h *sinkv1.ApplyHeader, body []byte) *sinkv1.ApplyResponse {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.o.URL, bytes.NewReader(body))
	if err != nil {
		return &sinkv1.ApplyResponse{Code: "invalid", Message: err.Error(), Permanent: true}
	}
	ct := "application/json"
	if h.GetFormat() == sinkv1.Format_FORMAT_YAML {
		ct = "application/yaml"
	}
	req.Header.Set("Content-Type", ct)
	for k, v := range p.o.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Confighub-Sink", h.GetSink())
	req.Header.Set("X-Confighub-Stream", h.GetStream())
	req.Header.Set("X-Confighub-Generation", strconv.FormatUint(h.GetGeneration(), 10))
	req.Header.Set("X-Confighub-Hash", h.GetHash())
	if len(p.o.Secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(p.o.Secret, body))
	}
	res, err := p.o.Client.Do(req)
	if err != nil {
		return &sinkv1.ApplyResponse{Code: "unavailable", Message: fmt.Sprintf("webhook: %v", err)}
	}
	defer res.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20)) // reuse the connection
	return mapStatus(res.StatusCode, res.Header.Get("Retry-After"), strings.TrimSpace(string(snippet)), time.Now())
}

// mapStatus turns the webhook's answer into the hub's: 2xx applied, 429
// retry after Retry-After, other 4xx permanent, anything else retryable.
func mapStatus(code int, retryAfter, body string, now time.Time) *sinkv1.ApplyResponse {
	msg := fmt.Sprintf("webhook answered %d", code)
	if body != "" {
		msg += ": " + body
	}
	switch {
	case code >= 200 && code < 300:
		return &sinkv1.ApplyResponse{Applied: true}
	case code == http.StatusTooManyRequests:
		r := &sinkv1.ApplyResponse{Code: "rate-limited", Message: msg}
		if d, ok := parseRetryAfter(retryAfter, now); ok {
			r.RetryAfter = durationpb.New(d)
		}
		return r
	case code >= 400 && code < 500:
		return &sinkv1.ApplyResponse{Code: "rejected", Message: msg, Permanent: true}
	default:
		return &sinkv1.ApplyResponse{Code: fmt.Sprintf("webhook-%d", code), Message: msg}
	}
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
