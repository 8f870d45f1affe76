package statuspage

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sort"
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

// Source is the status view the page reads: the same snapshots and watch
// events as GetStatus and WatchStatus (hub.Hub implements it).
type Source interface {
	// Streams names every stream that has a sink or a configuration.
	Streams() []string
	Status(stream string) (*confighubv1.GetStatusResponse, error)
	Watch(ctx context.Context, stream string, fromRevision uint64) <-chan *confighubv1.WatchStatusResponse
	// DiffGenerations compares two generations of a stream (0: the
	// current one, and the one before it), as DiffConfig does.
	DiffGenerations(ctx context.Context, stream string, from, to uint64) (hub.Diff, error)
}

// Authorizer checks the bearer token of an HTTP request against a role
// (auth.Authenticator implements it): on a refusal, the status to answer
// and an error that never quotes the token.
type Authorizer interface {
	CheckRequest(w http.ResponseWriter, r *http.Request, need auth.Role) (auth.Principal, int, error)
}

var _ Source = (*hub.Hub)(nil)
var _ Authorizer = (*auth.Authenticator)(nil)

// Option configures a Handler.
type Option func(*Handler)

// WithAuth makes the API require a bearer token with the read role.
func WithAuth(a Authorizer) Option { return func(h *Handler) { h.auth = a } }

// WithLogger sets where denials are logged (never with the token).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithKeepalive sets how often an idle event stream sends a comment line
// (proxies close quiet connections). Default 15 s.
func WithKeepalive(d time.Duration) Option { return func(h *Handler) { h.keepalive = d } }

// Handler serves the page at / and its API under /api/v1/.
type Handler struct {
	src       Source
	auth      Authorizer
	log       *slog.Logger
	keepalive time.Duration
	ctx       context.Context
	mux       *http.ServeMux
	// events shares each change's event bytes between the pages watching.
	events *status.Encodings[[]byte]
	// rules checks the names a request gives by the rules gRPC applies
	// (rules.proto), so both APIs refuse a name with the same message.
	rules protovalidate.Validator
}

var _ http.Handler = (*Handler)(nil)

// New returns the page's handler. Event streams end when ctx ends (the
// hub's shutdown), so an HTTP server's Shutdown does not wait for them.
func New(ctx context.Context, src Source, opts ...Option) *Handler {
	h := &Handler{src: src, log: slog.New(slog.DiscardHandler), keepalive: 15 * time.Second, ctx: ctx, mux: http.NewServeMux(),
		events: status.NewEncodings[[]byte](status.DefaultWatchBuffer), rules: protovalidate.GlobalValidator}
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
	h.mux.HandleFunc("GET /api/v1/streams", h.authorized(h.streams))
	h.mux.HandleFunc("GET /api/v1/status", h.authorized(h.status))
	h.mux.HandleFunc("GET /api/v1/watch", h.authorized(h.watch))
	h.mux.HandleFunc("GET /api/v1/diff", h.authorized(h.diff))
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

// apiError is the JSON body of every API error.
type apiError struct {
	Error string `json:"error"`
	// Auth is set on 401: the page asks for a token.
	Auth bool `json:"auth,omitempty"`
}

func writeError(w http.ResponseWriter, code int, e apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(e)
}

// authorized wraps an API handler with the read-role check.
func (h *Handler) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.auth == nil {
			next(w, r)
			return
		}
		if _, code, err := h.auth.CheckRequest(w, r, auth.RoleRead); err != nil {
			if !errors.Is(err, auth.ErrNoToken) {
				h.log.Warn("status page: token refused", "path", r.URL.Path, "error", err)
			}
			writeError(w, code, apiError{Error: err.Error(), Auth: code == http.StatusUnauthorized})
			return
		}
		next(w, r)
	}
}

func (h *Handler) streams(w http.ResponseWriter, _ *http.Request) {
	s := h.src.Streams()
	sort.Strings(s)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string][]string{"streams": s})
}

var jsonOut = protojson.MarshalOptions{}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	stream := r.URL.Query().Get("stream")
	if !h.valid(w, &confighubv1.GetStatusRequest{Stream: stream}) {
		return
	}
	st, err := h.src.Status(stream)
	if err != nil {
		h.sourceError(w, err)
		return
	}
	b, err := jsonOut.Marshal(st)
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiError{Error: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// diff answers DiffConfig's response as protojson: generation to of
// stream (0: the current one) against from (0: the one before it).
func (h *Handler) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var gens [2]uint64
	for i, k := range []string{"from", "to"} {
		if v := q.Get(k); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				writeError(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("%s=%q is not a generation", k, v)})
				return
			}
			gens[i] = n
		}
	}
	stream := q.Get("stream")
	if !h.valid(w, &confighubv1.DiffConfigRequest{Stream: stream, From: gens[0], To: gens[1]}) {
		return
	}
	d, err := h.src.DiffGenerations(r.Context(), stream, gens[0], gens[1])
	if err != nil {
		h.sourceError(w, err)
		return
	}
	b, err := jsonOut.Marshal(d.Proto())
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiError{Error: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (h *Handler) sourceError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, hub.ErrNotFound) {
		code = http.StatusNotFound
	}
	writeError(w, code, apiError{Error: err.Error()})
}

// valid checks req, the gRPC request of the same call, against its rules
// and answers 400 with the rule's message when it breaks one: a name that
// no stream can have is the caller's mistake, not an unknown stream.
func (h *Handler) valid(w http.ResponseWriter, req proto.Message) bool {
	err := h.rules.Validate(req)
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

// watch streams WatchStatus events as Server-Sent Events: "id:" is the
// revision, "data:" the event as protojson. A client resumes with ?from=
// or Last-Event-ID set to the last id it saw, as a gRPC watcher does with
// from_revision.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	stream := q.Get("stream")
	from, err := resumeFrom(q.Get("from"), r.Header.Get("Last-Event-ID"))
	if err != nil {
		writeError(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	if !h.valid(w, &confighubv1.WatchStatusRequest{Stream: stream, FromRevision: from}) {
		return
	}
	if _, err := h.src.Status(stream); err != nil {
		h.sourceError(w, err)
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
	tick := time.NewTicker(h.keepalive)
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
// page watching (the broker hands them the same event), a snapshot (each
// watcher's own) goes through buf.
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
	b, err := jsonOut.MarshalAppend(b, proto.Message(ev))
	if err != nil {
		return b, err
	}
	return append(b, "\n\n"...), nil
}

func resumeFrom(query, header string) (uint64, error) {
	v := query
	if v == "" {
		v = header
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("from %q: not a revision", v)
	}
	return n, nil
}
