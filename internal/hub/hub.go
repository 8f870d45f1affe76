package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/configdiff"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/sink"
)

// DefaultMaxConfigBytes is the default largest configuration accepted.
const DefaultMaxConfigBytes = 256 << 20

// Hub orders the operations behind every RPC. Safe for concurrent use.
type Hub struct {
	store      store.Store
	pub        Publisher
	sinks      SinkAdmin
	view       status.View
	diag       Diagnostics
	clock      clockwork.Clock
	log        *slog.Logger
	maxBytes   int64
	secrets    SinkSecrets
	bounds     bounds
	refusals   Refusals
	maxSpecs   int // maxSinkSpecsBytes; smaller in tests
	deferBelow int // the store's DeferBelow (see prepare)
}

// SinkSecrets hides and restores the secrets of sink specs (redact.SinkSecrets).
type SinkSecrets interface {
	Redact(s *confighubv1.Sink) *confighubv1.Sink
	Restore(in, stored *confighubv1.Sink) (*confighubv1.Sink, error)
}

// Option configures a Hub.
type Option func(*Hub)

// WithClock sets the clock used for accept times.
func WithClock(c clockwork.Clock) Option { return func(h *Hub) { h.clock = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(h *Hub) { h.log = l } }

// WithMaxConfigBytes bounds the size of a configuration (push or upload).
func WithMaxConfigBytes(n int64) Option { return func(h *Hub) { h.maxBytes = n } }

// WithSinkSecrets sets how sink secrets are hidden (default: a random key).
func WithSinkSecrets(s SinkSecrets) Option { return func(h *Hub) { h.secrets = s } }

// New returns a hub on st that hands configurations and sinks to p.
func New(st store.Store, p Ports, opts ...Option) *Hub {
	h := &Hub{store: st, pub: p.Publisher, sinks: p.Sinks, view: p.Status, diag: p.Diagnostics, clock: clockwork.NewRealClock(),
		log: slog.New(slog.DiscardHandler), maxBytes: DefaultMaxConfigBytes, secrets: redact.NewSinkSecrets(nil),
		bounds: bounds{limits: DefaultLimits(), uploadLimit: DefaultUploadBudgetBytes}, maxSpecs: maxSinkSpecsBytes, deferBelow: st.DeferBelow()}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Start loads what the store holds, seeds the sinks of the sinks file, and
// drives every sink to its stream's last acknowledged generation.
func (h *Hub) Start(ctx context.Context, seed []*confighubv1.Sink) error {
	// The whole seed is checked first: a bad file changes nothing.
	normalised := make([]*confighubv1.Sink, 0, len(seed))
	seen := map[string]bool{}
	for i, s := range seed {
		if path, ok := redact.FindPlaceholder(s); ok {
			return fmt.Errorf("sink %d (%q): %s holds a redacted placeholder: the sinks file must hold the value itself", i, s.GetName(), path)
		}
		n, err := h.sinks.ValidateSink(s)
		if err != nil {
			return fmt.Errorf("sink %d (%q): %w", i, s.GetName(), err)
		}
		if seen[n.GetName()] {
			return fmt.Errorf("sink %d: name %q is used twice", i, n.GetName())
		}
		seen[n.GetName()] = true
		normalised = append(normalised, n)
	}
	applied, err := h.store.ListApplied(ctx)
	if err != nil {
		return fmt.Errorf("load applied records: %w", err)
	}
	h.pub.Restore(applied)
	conv, err := h.store.ListConverged(ctx)
	if err != nil {
		return fmt.Errorf("load convergence records: %w", err)
	}
	h.pub.RestoreConverged(conv)
	streams, err := h.store.ListStreams(ctx)
	if err != nil {
		return fmt.Errorf("load streams: %w", err)
	}
	for _, c := range streams {
		h.pub.Publish(c)
	}
	stored, err := h.store.ListSinks(ctx)
	if err != nil {
		return fmt.Errorf("load sinks: %w", err)
	}
	for _, s := range normalised {
		if err := h.store.PutSink(ctx, s); err != nil {
			return fmt.Errorf("store seed sink %q: %w", s.GetName(), err)
		}
	}
	running := len(normalised) // each sink once: a seeded one is also stored
	for _, s := range stored {
		if seen[s.GetName()] {
			continue
		}
		if _, _, err := h.sinks.PutSink(s); err == nil {
			running++
		} else {
			// A kind no longer compiled in must not stop the hub.
			h.log.Error("stored sink not started", "sink", s.GetName(), "error", err)
		}
	}
	for _, s := range normalised {
		if _, _, err := h.sinks.PutSink(s); err != nil {
			return fmt.Errorf("start sink %q: %w", s.GetName(), err)
		}
	}
	h.log.Info("hub started", "streams", len(streams), "sinks", running, "seeded", len(normalised))
	return nil
}

// PushInput is one configuration to accept; Hash, when set, is its SHA-256.
type PushInput struct {
	Stream             string
	Config             []byte
	Format             config.Format
	ExpectedGeneration uint64
	Labels             map[string]string
	Hash               string
	Origin             config.Origin
}

// PushResult is what the push acknowledged; Sinks is the stream's sinks at the ack.
type PushResult struct {
	Generation uint64
	Hash       string
	Unchanged  bool
	Sinks      int
}

// Push checks, hashes and durably stores a configuration, then hands it to
// the engine. It returns once the store committed, never after a sink.
func (h *Hub) Push(ctx context.Context, in PushInput) (PushResult, error) {
	stream := config.StreamName(in.Stream)
	if h.maxBytes > 0 && int64(len(in.Config)) > h.maxBytes {
		return PushResult{}, fmt.Errorf("%w: configuration of %d bytes exceeds the limit of %d bytes (--max-config-bytes)", ErrTooLarge, len(in.Config), h.maxBytes)
	}
	done, err := h.admitConfig(stream, int64(len(in.Config)))
	if err != nil {
		return PushResult{}, err
	}
	defer done()
	return h.commit(ctx, stream, in, h.prepare(ctx, stream, in))
}

// prepared is a push (or upload: what) checked, hashed and staged; or why not.
type prepared struct {
	what     string // "push" or "upload", for the abandoned message
	checked  config.Checked
	checkErr error
	hash     string
	staged   store.Staged // nil when the check failed first
	stageErr error
}

// prepare checks, hashes and stages in.Config: from the store's DeferBelow
// on the stage (hashing as the disk writes) runs beside the check; below it,
// where the stage writes nothing, the three run in turn on this goroutine.
func (h *Hub) prepare(ctx context.Context, stream string, in PushInput) prepared {
	p := prepared{what: "push", hash: in.Hash}
	if len(in.Config) < h.deferBelow {
		if p.checked, p.checkErr = config.Check(in.Config, in.Format); p.checkErr == nil {
			if p.hash == "" {
				p.hash = config.Hash(in.Config)
			}
			p.staged, p.stageErr = h.store.StageConfig(ctx, stream, in.Config, nil)
		}
		return p
	}
	stageCtx, cancelStage := context.WithCancel(ctx)
	defer cancelStage()
	var sum *config.Hasher
	var tee io.Writer // nil unless hashing: a typed nil is not nil
	if p.hash == "" {
		sum = config.NewHasher()
		tee = sum
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		p.staged, p.stageErr = h.store.StageConfig(stageCtx, stream, in.Config, tee)
		if p.stageErr == nil && sum != nil {
			p.hash = sum.Sum()
		}
	})
	if p.checked, p.checkErr = config.Check(in.Config, in.Format); p.checkErr != nil {
		cancelStage() // no need to finish writing bytes that are dropped
	}
	wg.Wait()
	return p
}

// commit stores a prepared configuration and hands it to the engine, or maps why it was not prepared to the hub's sentinels.
func (h *Hub) commit(ctx context.Context, stream string, in PushInput, p prepared) (PushResult, error) {
	if p.staged != nil {
		defer func() { _ = p.staged.Discard() }() // a no-op after Commit
	}
	switch {
	case p.checkErr != nil:
		return PushResult{}, fmt.Errorf("%w: stream %q: %w", ErrInvalid, stream, p.checkErr)
	case p.stageErr != nil:
		return PushResult{}, p.storeErr(ctx, stream, p.stageErr)
	}
	var js []byte // the YAML form's JSON, made by the check, kept for the sinks
	if p.checked.Format == config.FormatYAML {
		js = p.checked.JSON
	}
	origin := in.Origin
	origin.Entities = configdiff.Count(p.checked.JSON)
	rec := config.New(stream, 0, p.hash, p.checked.Format, in.Config, js, in.Labels, h.clock.Now()).WithOrigin(origin)
	stored, unchanged, err := p.staged.Commit(ctx, rec, in.ExpectedGeneration)
	if errors.Is(err, store.ErrConflict) {
		return PushResult{}, fmt.Errorf("%w: %v", ErrStale, err) // err names the stream and both generations
	}
	if err != nil {
		return PushResult{}, p.storeErr(ctx, stream, err)
	}
	// The engine gets the stored config itself: its bytes are held once.
	if !unchanged {
		h.pub.Publish(stored)
	}
	sinks := h.sinks.SinkCount(stream)
	h.log.LogAttrs(ctx, slog.LevelInfo, "config accepted", slog.String("stream", stream), slog.Uint64("generation", stored.Generation),
		slog.String("hash", stored.Hash), slog.Int("bytes", len(in.Config)), slog.Bool("unchanged", unchanged), slog.Int("sinks", sinks))
	return PushResult{Generation: stored.Generation, Hash: stored.Hash, Unchanged: unchanged, Sinks: sinks}, nil
}

// storeErr is ErrUnavailable: the store's error, or that the caller abandoned the push.
func (p prepared) storeErr(ctx context.Context, stream string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: stream %q: %s abandoned: %v", ErrUnavailable, stream, p.what, ctx.Err())
	}
	return fmt.Errorf("%w: store the configuration of stream %q: %v", ErrUnavailable, stream, err)
}

// Config returns a stream's current configuration.
func (h *Hub) Config(ctx context.Context, stream string) (*config.Config, error) {
	stream = config.StreamName(stream)
	if c := h.pub.Current(stream); c != nil {
		return c, nil
	}
	c, err := h.store.GetStream(ctx, stream)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: stream %q has no configuration", ErrNotFound, stream)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read stream %q: %v", ErrUnavailable, stream, err)
	}
	return c, nil
}

// SinkConfig returns what a sink last applied, or with failed, what it last failed to apply and the error.
func (h *Hub) SinkConfig(name string, failed bool) (*config.Config, *sink.Error, error) {
	if !h.sinks.HasSink(name) {
		return nil, nil, fmt.Errorf("%w: sink %q", ErrNotFound, name)
	}
	if failed {
		c, e, ok := h.diag.LastFailed(name)
		if !ok {
			return nil, nil, fmt.Errorf("%w: sink %q has no failed apply", ErrNotFound, name)
		}
		return c, e, nil
	}
	c, ok := h.diag.LastApplied(name)
	if !ok {
		return nil, nil, fmt.Errorf("%w: sink %q has applied nothing yet", ErrNotFound, name)
	}
	return c, nil, nil
}

// Status returns a consistent snapshot of a stream's sinks.
func (h *Hub) Status(stream string) (*confighubv1.GetStatusResponse, error) {
	stream = config.StreamName(stream)
	st, ok := h.view.Snapshot(stream)
	if !ok {
		return nil, fmt.Errorf("%w: stream %q has no configuration and no sinks", ErrNotFound, stream)
	}
	return st, nil
}

// Watch streams a stream's status changes (see status.View).
func (h *Hub) Watch(ctx context.Context, stream string, from uint64) <-chan *confighubv1.WatchStatusResponse {
	return h.view.Watch(ctx, config.StreamName(stream), from)
}

// Streams names the streams that have a sink, sorted.
func (h *Hub) Streams() []string {
	var out []string
	for _, in := range h.ListStreams() {
		if in.Sinks > 0 {
			out = append(out, in.Name)
		}
	}
	return out
}

// ListSinks lists the sinks of a stream ("" for all), their secrets redacted.
func (h *Hub) ListSinks(stream string) []*confighubv1.Sink {
	sinks := h.sinks.ListSinks(stream)
	out := make([]*confighubv1.Sink, len(sinks))
	for i, s := range sinks {
		out[i] = h.secrets.Redact(s)
	}
	return out
}

// PutSink validates, stores, then starts a sink (placeholders in spec stand
// for the stored values), or takes it out of the store again if it does not
// start; it returns the sink with its secrets redacted.
func (h *Hub) PutSink(ctx context.Context, spec *confighubv1.Sink) (*confighubv1.Sink, bool, error) {
	prev := h.sinks.Sink(spec.GetName())
	restored, err := h.secrets.Restore(spec, prev)
	if err != nil {
		return nil, false, fmt.Errorf("%w: sink %q: %v", ErrInvalid, spec.GetName(), err)
	}
	n, err := h.sinks.ValidateSink(restored)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrInvalid, err) // the spec's checks name the sink
	}
	if err := h.checkSpecBytes(n); err != nil {
		return nil, false, err
	}
	if err := h.admitSink(n.GetName()); err != nil {
		return nil, false, err
	}
	if err := h.store.PutSink(ctx, n); err != nil {
		return nil, false, fmt.Errorf("%w: store sink %q: %v", ErrUnavailable, n.GetName(), err)
	}
	out, created, err := h.sinks.PutSink(n)
	if err != nil {
		var rerr error
		if prev != nil {
			rerr = h.store.PutSink(context.WithoutCancel(ctx), prev)
		} else {
			rerr = h.store.DeleteSink(context.WithoutCancel(ctx), n.GetName())
		}
		if rerr != nil {
			h.log.Error("restoring the stored sink after a failed start failed", "sink", n.GetName(), "error", rerr)
		}
		if errors.Is(err, sink.ErrInvalidSpec) || errors.Is(err, sink.ErrUnknownKind) {
			return nil, false, fmt.Errorf("%w: %w", ErrInvalid, err) // the kind's factory names the sink
		}
		return nil, false, fmt.Errorf("%w: start sink %q: %v", ErrUnavailable, n.GetName(), err)
	}
	h.log.Info("sink put", "sink", out.GetName(), "kind", out.GetKind(), "stream", out.GetStream(), "created", created)
	return h.secrets.Redact(out), created, nil
}

// DeleteSink stops a sink and forgets it (one of the sinks file comes back at the next start).
func (h *Hub) DeleteSink(ctx context.Context, name string) error {
	engErr := h.sinks.DeleteSink(name)
	stErr := h.store.DeleteSink(ctx, name)
	if engErr != nil && errors.Is(stErr, store.ErrNotFound) {
		return fmt.Errorf("%w: sink %q", ErrNotFound, name)
	}
	if stErr != nil && !errors.Is(stErr, store.ErrNotFound) {
		return fmt.Errorf("%w: delete sink %q: %v", ErrUnavailable, name, stErr)
	}
	h.log.Info("sink deleted", "sink", name)
	return nil
}

// ListSinks answers every spec at once: bounding one spec (an inline CA
// bundle fits) and all of them keeps it under the default message limit.
const (
	maxSinkSpecBytes  = 256 << 10
	maxSinkSpecsBytes = 32 << 20
)

// checkSpecBytes refuses a spec over maxSinkSpecBytes (ErrInvalid) or past h.maxSpecs in all (ErrTooLarge).
func (h *Hub) checkSpecBytes(n *confighubv1.Sink) error {
	size := proto.Size(n)
	if size > maxSinkSpecBytes {
		return fmt.Errorf("%w: sink %q: the spec is %d bytes, at most %d (ListSinks answers every spec at once); put large TLS bundles in files (ca_file, cert_file, key_file)", ErrInvalid, n.GetName(), size, maxSinkSpecBytes)
	}
	total := size + h.sinks.SpecBytes(n.GetName())
	if total > h.maxSpecs {
		return fmt.Errorf("%w: sink %q: the sinks' specs would hold %d bytes in all, at most %d (ListSinks answers every spec at once); shrink specs (TLS bundles in files) or delete sinks", ErrTooLarge, n.GetName(), total, h.maxSpecs)
	}
	return nil
}
