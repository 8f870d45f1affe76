package statuspage

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/hub"
)

//go:embed web
var webFS embed.FS

// Source is the status view the page reads, as GetStatus and WatchStatus do (hub.Hub).
type Source interface {
	// Streams names the streams that have a sink, sorted.
	Streams() []string
	Status(stream string) (*confighubv1.GetStatusResponse, error)
	Watch(ctx context.Context, stream string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse
	// DiffGenerations compares two generations of a stream, as DiffConfig does.
	DiffGenerations(ctx context.Context, stream string, from, to uint64) (hub.Diff, error)
}

var _ Source = (*hub.Hub)(nil)

// Option configures a Handler.
type Option func(*Handler)

// WithAuth makes the API require a bearer token with the read role.
func WithAuth(a *auth.Authenticator) Option { return func(h *Handler) { h.auth = a } }

// WithLogger sets where denials are logged (never with the token).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// keepalive is how often an idle event stream sends a comment (proxies close quiet ones).
const keepalive = 15 * time.Second

// Handler serves the page at / and its API under /api/v1/.
type Handler struct {
	src    Source
	auth   *auth.Authenticator
	log    *slog.Logger
	ctx    context.Context
	mux    *http.ServeMux
	events *status.Encodings[[]byte] // each change's bytes, shared by the pages watching
}

var _ http.Handler = (*Handler)(nil)

// New returns the page's handler; event streams end when ctx (the hub's) ends.
func New(ctx context.Context, src Source, opts ...Option) *Handler {
	h := &Handler{src: src, log: slog.New(slog.DiscardHandler), ctx: ctx, mux: http.NewServeMux(),
		events: status.NewEncodings[[]byte](status.DefaultWatchBuffer)}
	for _, o := range opts {
		o(h)
	}
	static, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	files := http.FileServerFS(static)
	h.mux.Handle("GET /{$}", files)
	for _, f := range []string{"app.js", "style.css"} {
		h.mux.Handle("GET /"+f, files)
	}
	refuse := func(w http.ResponseWriter, code int, err error) {
		writeError(w, code, apiError{Error: err.Error(), Auth: code == http.StatusUnauthorized})
	}
	for path, api := range map[string]http.HandlerFunc{"streams": h.streams, "status": h.status, "watch": h.watch, "diff": h.diff} {
		h.mux.Handle("GET /api/v1/"+path, h.auth.Require(auth.RoleRead, h.log, "status page", refuse, api))
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// The page loads only its own files and talks only to its own API.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// apiError is the JSON body of every API error; Auth (on 401) makes the page ask for a token.
type apiError struct {
	Error string `json:"error"`
	Auth  bool   `json:"auth,omitempty"`
}

func writeError(w http.ResponseWriter, code int, e apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(e)
}

func (h *Handler) streams(w http.ResponseWriter, _ *http.Request) {
	s := h.src.Streams()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string][]string{"streams": s})
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	stream := r.URL.Query().Get("stream")
	if !h.valid(w, &confighubv1.GetStatusRequest{Stream: stream}) {
		return
	}
	st, err := h.src.Status(stream)
	writeProto(w, st, err)
}

// diff answers DiffConfig's response as protojson.
func (h *Handler) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, ok := number(w, q.Get("from"), "from=%q is not a generation")
	if !ok {
		return
	}
	to, ok := number(w, q.Get("to"), "to=%q is not a generation")
	stream := q.Get("stream")
	if !ok || !h.valid(w, &confighubv1.DiffConfigRequest{Stream: stream, From: from, To: to}) {
		return
	}
	d, err := h.src.DiffGenerations(r.Context(), stream, from, to)
	if err != nil {
		writeProto(w, nil, err)
		return
	}
	writeProto(w, d.Proto(), nil)
}

// writeProto answers m as protojson, or err (404 for hub.ErrNotFound).
func writeProto(w http.ResponseWriter, m proto.Message, err error) {
	var b []byte
	if err == nil {
		b, err = protojson.Marshal(m)
	}
	switch {
	case errors.Is(err, hub.ErrNotFound):
		writeError(w, http.StatusNotFound, apiError{Error: err.Error()})
	case err != nil:
		writeError(w, http.StatusInternalServerError, apiError{Error: err.Error()})
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

// valid checks req, the same call's gRPC request, against its rules, and answers 400 when it breaks one.
func (h *Handler) valid(w http.ResponseWriter, req proto.Message) bool {
	err := protovalidate.Validate(req)
	if err == nil {
		return true
	}
	code := http.StatusInternalServerError
	if _, ok := errors.AsType[*protovalidate.ValidationError](err); ok {
		code = http.StatusBadRequest
	}
	writeError(w, code, apiError{Error: err.Error()})
	return false
}

// watch streams WatchStatus events as Server-Sent Events ("id:" the
// revision, "data:" protojson), resumed with ?from= or Last-Event-ID.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request) {
	stream := r.URL.Query().Get("stream")
	from, ok := number(w, cmp.Or(r.URL.Query().Get("from"), r.Header.Get("Last-Event-ID")), "from %q: not a revision")
	if !ok || !h.valid(w, &confighubv1.WatchStatusRequest{Stream: stream, FromRevision: from}) {
		return
	}
	if _, err := h.src.Status(stream); err != nil {
		writeProto(w, nil, err)
		return
	}
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	ch := h.src.Watch(ctx, stream, from)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	tick := time.NewTicker(keepalive)
	defer tick.Stop()
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil {
				return
			}
			_ = rc.Flush()
		case ev, ok := <-ch:
			if !ok {
				// The hub stops: say so, the page reconnects later.
				_, _ = w.Write([]byte("event: end\ndata: {}\n\n"))
				_ = rc.Flush()
				return
			}
			out, err := h.encode(&buf, ev)
			if err != nil {
				h.log.Error("status page: encode event", "error", err)
				return
			}
			if _, err := w.Write(out); err != nil {
				return
			}
			// A burst (a push to 1,000 sinks) goes out in few writes.
			if len(ch) == 0 {
				if err := rc.Flush(); err != nil {
					return
				}
			}
		}
	}
}

// encode returns ev as an event: a change's bytes are shared by every
// page, a snapshot (each watcher's own) goes through buf.
func (h *Handler) encode(buf *[]byte, ev *confighubv1.WatchStatusResponse) ([]byte, error) {
	if ev.GetSnapshot() != nil {
		b, err := appendEvent((*buf)[:0], ev)
		*buf = b
		return b, err
	}
	return h.events.Get(ev, func() ([]byte, error) { return appendEvent(nil, ev) })
}

func appendEvent(b []byte, ev *confighubv1.WatchStatusResponse) ([]byte, error) {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, ev.GetRevision(), 10)
	b = append(b, "\ndata: "...)
	b, err := protojson.MarshalOptions{}.MarshalAppend(b, ev)
	if err != nil {
		return b, err
	}
	return append(b, "\n\n"...), nil
}

// number reads v (0 when empty), or answers 400 with bad (v's format).
func number(w http.ResponseWriter, v, bad string) (uint64, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf(bad, v)})
		return 0, false
	}
	return n, true
}
