package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// Defaults of the hub's bounds (Limits).
const (
	DefaultMaxStreams = 1000
	DefaultMaxSinks   = 50_000
	// DefaultMaxWatchers bounds the WatchStatus streams open at once.
	DefaultMaxWatchers        = 10_000
	DefaultMaxHeldConfigBytes = 8 * DefaultMaxConfigBytes
	DefaultUploadBudgetBytes  = 2 * DefaultMaxConfigBytes // two of the largest uploads at once
)

// Limits bound what clients can make the hub hold, each set by the flag of
// its Flag constant (0: no bound). A bound counts what exists and refuses
// only what would add to it: a hub that starts with more serves it all.
type Limits struct {
	MaxStreams         int
	MaxSinks           int
	MaxWatchers        int
	MaxHeldConfigBytes int64
}

// DefaultLimits are the bounds a hub has unless WithLimits says otherwise.
func DefaultLimits() Limits {
	return Limits{MaxStreams: DefaultMaxStreams, MaxSinks: DefaultMaxSinks, MaxWatchers: DefaultMaxWatchers, MaxHeldConfigBytes: DefaultMaxHeldConfigBytes}
}

// WithLimits sets the hub's bounds (default DefaultLimits).
func WithLimits(l Limits) Option { return func(h *Hub) { h.bounds.limits = l } }

// WithUploadBudgetBytes bounds the total_size of all uploads in flight (0: none).
func WithUploadBudgetBytes(n int64) Option { return func(h *Hub) { h.bounds.uploadLimit = n } }

// Refusals counts the refusals of each bound by its flag (metrics.Bounds).
type Refusals interface{ Refused(flag string) }

// WithRefusals counts every refusal of a bound on r.
func WithRefusals(r Refusals) Option { return func(h *Hub) { h.refusals = r } }

// Flags of the bounds, as refusals and metrics name them.
const (
	FlagMaxStreams         = "--max-streams"
	FlagMaxSinks           = "--max-sinks"
	FlagMaxWatchers        = "--max-watchers"
	FlagMaxHeldConfigBytes = "--max-held-config-bytes"
)

// Usage is one bound: what is held of it and its limit (0: none).
type Usage struct {
	Flag  string
	Used  int64
	Limit int64
}

// Usage reports every bound of the hub (scraped by metrics.Bounds).
func (h *Hub) Usage() []Usage {
	streams, bytes := h.pub.Held()
	l := h.bounds.limits
	h.bounds.mu.Lock()
	defer h.bounds.mu.Unlock()
	watchers := h.bounds.watchers
	return []Usage{
		{FlagMaxStreams, int64(streams), int64(l.MaxStreams)},
		{FlagMaxSinks, int64(h.sinks.SinkTotal()), int64(l.MaxSinks)},
		{FlagMaxWatchers, int64(watchers), int64(l.MaxWatchers)},
		{FlagMaxHeldConfigBytes, bytes, l.MaxHeldConfigBytes},
	}
}

// bounds adds what is on its way to what the engine and sinks count, so concurrent pushes cannot
// pass a bound together; what does not fit is refused at once.
type bounds struct {
	limits       Limits
	uploadLimit  int64 // <= 0: no budget
	mu           sync.Mutex
	pushing      map[string]int  // pushes in flight per stream
	newStreams   map[string]bool // those streams that held no configuration
	pendingBytes int64           // the bytes admitted pushes may add
	deleting     map[string]bool // streams DeleteStream is removing
	watchers     int
	uploadBytes  int64 // total_size announced by the uploads in flight
	uploads      int
}

// release returns f as a function that runs it once under b.mu.
func (b *bounds) release(f func()) func() {
	return sync.OnceFunc(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		f()
	})
}

// refuse counts a refusal of flag's bound and says why, what to do instead, or to raise flag.
func (h *Hub) refuse(flag, what, instead string) error {
	if h.refusals != nil {
		h.refusals.Refused(flag)
	}
	return fmt.Errorf("%w: %s (%s); %s or raise %s", ErrLimit, what, flag, instead, flag)
}

// reserveUpload takes n bytes of the upload budget until the returned function runs.
func (h *Hub) reserveUpload(n int64) (func(), error) {
	b := &h.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.uploadLimit > 0 && b.uploadBytes+n > b.uploadLimit {
		return nil, fmt.Errorf("%w: an upload of %d bytes does not fit the hub's budget of %d bytes for uploads in flight (--upload-budget-bytes): %d bytes are held by %d upload(s); retry when one has finished",
			ErrTooLarge, n, b.uploadLimit, b.uploadBytes, b.uploads)
	}
	b.uploadBytes += n
	b.uploads++
	return b.release(func() { b.uploadBytes -= n; b.uploads-- }), nil
}

// UploadsInFlight is the bytes the uploads in flight announced, and how many they are.
func (h *Hub) UploadsInFlight() (bytes int64, uploads int) {
	h.bounds.mu.Lock()
	defer h.bounds.mu.Unlock()
	return h.bounds.uploadBytes, h.bounds.uploads
}

// admitConfig admits a push of size bytes to stream against MaxStreams and
// MaxHeldConfigBytes until the returned function runs, or refuses it.
func (h *Hub) admitConfig(stream string, size int64) (func(), error) {
	b := &h.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := h.checkConfigLocked(stream, size); err != nil {
		return nil, err
	}
	if b.pushing == nil {
		b.pushing, b.newStreams = map[string]int{}, map[string]bool{}
	}
	if b.pushing[stream] == 0 && h.pub.Current(stream) == nil {
		b.newStreams[stream] = true
	}
	b.pushing[stream]++
	b.pendingBytes += size
	return b.release(func() {
		b.pendingBytes -= size
		if b.pushing[stream]--; b.pushing[stream] == 0 {
			delete(b.pushing, stream)
			delete(b.newStreams, stream)
		}
	}), nil
}

func (h *Hub) checkConfigLocked(stream string, size int64) error {
	b := &h.bounds
	if b.deleting[stream] {
		return fmt.Errorf("%w: stream %q is being deleted; push again once DeleteStream answered", ErrUnavailable, stream)
	}
	streams, held := h.pub.Held()
	cur := h.pub.Current(stream)
	if l := b.limits.MaxStreams; l > 0 && cur == nil && b.pushing[stream] == 0 {
		if n := streams + len(b.newStreams); n >= l {
			return h.refuse(FlagMaxStreams, fmt.Sprintf("stream %q would be a new stream, and the hub holds %d of at most %d", stream, n, l),
				"delete a stream that is not used (confighubctl streams delete NAME)")
		}
	}
	if l := b.limits.MaxHeldConfigBytes; l > 0 {
		var prev int64
		if cur != nil {
			prev = int64(len(cur.Raw))
		}
		if total := held + b.pendingBytes - prev + size; total > l {
			return h.refuse(FlagMaxHeldConfigBytes, fmt.Sprintf("a configuration of %d bytes for stream %q would make the streams' configurations hold %d bytes, at most %d",
				size, stream, total, l), "delete streams that are not used")
		}
	}
	return nil
}

// admitSink refuses a sink of a new name at MaxSinks.
func (h *Hub) admitSink(name string) error {
	l := h.bounds.limits.MaxSinks
	if l <= 0 || h.sinks.HasSink(name) {
		return nil
	}
	if n := h.sinks.SinkTotal(); n >= l {
		return h.refuse(FlagMaxSinks, fmt.Sprintf("sink %q would be a new sink, and the hub has %d of at most %d", name, n, l), "delete a sink")
	}
	return nil
}

// BeginWatch admits one status watcher against MaxWatchers until the returned function runs, or refuses it.
func (h *Hub) BeginWatch() (func(), error) {
	b := &h.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.limits.MaxWatchers; l > 0 && b.watchers >= l {
		return nil, h.refuse(FlagMaxWatchers, fmt.Sprintf("the hub has %d status watchers open, at most %d", b.watchers, l), "close watches that are not read")
	}
	b.watchers++
	return b.release(func() { b.watchers-- }), nil
}

// StreamInfo is one stream as ListStreams shows it (Config nil: only sinks name it).
type StreamInfo struct {
	Name   string
	Config *config.Config
	Sinks  int
}

// ListStreams lists the streams that hold a configuration or that a sink reads, sorted by name.
func (h *Hub) ListStreams() []StreamInfo {
	byName := map[string]*StreamInfo{}
	for _, c := range h.pub.Streams() {
		byName[c.Stream] = &StreamInfo{Name: c.Stream, Config: c}
	}
	for _, s := range h.sinks.ListSinks("") {
		in := byName[s.GetStream()]
		if in == nil {
			in = &StreamInfo{Name: s.GetStream()}
			byName[s.GetStream()] = in
		}
		in.Sinks++
	}
	out := make([]StreamInfo, 0, len(byName))
	for _, in := range byName {
		out = append(out, *in)
	}
	slices.SortFunc(out, func(a, b StreamInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// DeleteStream removes a stream's configuration from the store and the
// engine; ErrInUse while sinks read it, ErrUnavailable while a push to it
// is in flight (pushes are refused until the deletion answered).
func (h *Hub) DeleteStream(ctx context.Context, name string) error {
	name = config.StreamName(name)
	if sinks := h.sinks.ListSinks(name); len(sinks) > 0 {
		names := make([]string, len(sinks))
		for i, s := range sinks {
			names[i] = s.GetName()
		}
		return fmt.Errorf("%w: stream %q is read by %d sink(s): %s; delete them first (confighubctl sinks delete NAME)", ErrInUse, name, len(sinks), joinNames(names, 10))
	}
	b := &h.bounds
	b.mu.Lock()
	if b.pushing[name] > 0 || b.deleting[name] {
		b.mu.Unlock()
		return fmt.Errorf("%w: stream %q: a push to it or another deletion is in flight; retry", ErrUnavailable, name)
	}
	if b.deleting == nil {
		b.deleting = map[string]bool{}
	}
	b.deleting[name] = true
	b.mu.Unlock()
	defer b.release(func() { delete(b.deleting, name) })()
	switch err := h.store.DeleteStream(ctx, name); {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: stream %q has no configuration", ErrNotFound, name)
	case errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("%w: delete stream %q: %v", ErrUnsupported, name, err)
	case err != nil:
		return fmt.Errorf("%w: delete stream %q: %v", ErrUnavailable, name, err)
	}
	if err := h.pub.DeleteStream(name); err != nil {
		// A sink was put since the check: it keeps what the engine offered it.
		return fmt.Errorf("%w: %v", ErrInUse, err)
	}
	h.log.Info("stream deleted", "stream", name)
	return nil
}

// joinNames lists up to max names, and how many more there are.
func joinNames(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
