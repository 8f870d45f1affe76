package kongemu

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Step is one scripted answer (see Script). The zero Step lets the request
// through to the normal handler.
type Step struct {
	// Status answers with this code (and Body, or a Kong-like message).
	Status int `json:"status,omitempty"`
	// RetryAfter is sent as the Retry-After header (seconds or HTTP date).
	RetryAfter string `json:"retry_after,omitempty"`
	Body       string `json:"body,omitempty"`
	// Drop hijacks the connection and closes it without an answer.
	Drop bool `json:"drop,omitempty"`
	// Hang holds the request until Release, the client leaving, or Close.
	Hang bool `json:"hang,omitempty"`
	// Latency delays the answer.
	Latency Duration `json:"latency,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as "150ms".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want a string like \"150ms\": %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

type script struct {
	method string
	path   string
	steps  []Step
}

func (s *script) match(r *http.Request) bool {
	return (s.method == "" || s.method == r.Method) && strings.HasPrefix(r.URL.Path, s.path)
}

type faults struct {
	latency   time.Duration
	hang      bool
	drop      int // requests still to drop; < 0 drops all
	bodyLimit int64
	scripts   []*script
}

// SetLatency delays every Admin API request by d (0 clears).
func (g *Gateway) SetLatency(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults.latency = d
}

// Hang makes every Admin API request hang until Release, the client
// leaving (request context), or Close.
func (g *Gateway) Hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults.hang = true
}

// Release stops hanging and lets every hung request through.
func (g *Gateway) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults.hang = false
	close(g.release)
	g.release = make(chan struct{})
}

// DropNext drops the connection of the next n Admin API requests (n < 0:
// every request until ClearFaults).
func (g *Gateway) DropNext(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults.drop = n
}

// SetBodyLimit answers 413 to bodies above n bytes (0: no limit).
func (g *Gateway) SetBodyLimit(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults.bodyLimit = n
}

// Script answers the next requests matching method ("" any) and the path
// prefix with steps, one step per request, then returns to normal.
func (g *Gateway) Script(method, pathPrefix string, steps ...Step) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults.scripts = append(g.faults.scripts, &script{method: method, path: pathPrefix, steps: steps})
}

// ScriptConfig scripts the next POST /config answers, e.g.
// ScriptConfig(Step{Status: 429, RetryAfter: "2"}, Step{Status: 500}).
func (g *Gateway) ScriptConfig(steps ...Step) { g.Script(http.MethodPost, "/config", steps...) }

// ClearFaults removes every fault (latency, hang, drops, scripts, body
// limit) and releases hung requests.
func (g *Gateway) ClearFaults() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults = faults{}
	close(g.release)
	g.release = make(chan struct{})
}

// inject applies the faults before the Admin API handlers.
func (g *Gateway) inject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		f := &g.faults
		var step Step
		for i, s := range f.scripts {
			if s.match(r) {
				step = s.steps[0]
				s.steps = s.steps[1:]
				if len(s.steps) == 0 {
					f.scripts = append(f.scripts[:i:i], f.scripts[i+1:]...)
				}
				break
			}
		}
		drop := step.Drop
		if f.drop != 0 {
			drop = true
			if f.drop > 0 {
				f.drop--
			}
		}
		latency := f.latency + time.Duration(step.Latency)
		hang := f.hang || step.Hang
		limit := f.bodyLimit
		release := g.release
		g.mu.Unlock()

		if drop {
			g.dropConn(w)
			return
		}
		if latency > 0 {
			select {
			case <-g.clock.After(latency):
			case <-r.Context().Done():
				return
			case <-g.done:
				return
			}
		}
		if hang {
			g.setHanging(+1)
			select {
			case <-release:
			case <-r.Context().Done():
			case <-g.done:
			}
			g.setHanging(-1)
			if r.Context().Err() != nil {
				return
			}
		}
		if step.Status != 0 {
			if step.RetryAfter != "" {
				w.Header().Set("Retry-After", step.RetryAfter)
			}
			if step.Body != "" {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.WriteHeader(step.Status)
				_, _ = w.Write([]byte(step.Body))
				return
			}
			writeJSON(w, step.Status, message(defaultMessage(step.Status)))
			return
		}
		if limit > 0 {
			if r.ContentLength > limit {
				writeJSON(w, http.StatusRequestEntityTooLarge, message("Request size limit exceeded"))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

// defaultMessage is what Kong's /config answers with these codes.
func defaultMessage(code int) string {
	switch code {
	case http.StatusTooManyRequests:
		return "Currently loading previous configuration"
	case http.StatusRequestEntityTooLarge:
		return "Request size limit exceeded"
	case http.StatusServiceUnavailable:
		return "Kong is exiting"
	case http.StatusGatewayTimeout:
		return "Timed out while loading configuration"
	case http.StatusInternalServerError:
		return "An unexpected error occurred"
	}
	return http.StatusText(code)
}

func (g *Gateway) dropConn(w http.ResponseWriter) {
	if rw, ok := w.(*recorder); ok {
		rw.dropped = true
		rw.logOnce()
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 cannot be hijacked: abort the stream instead.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func (g *Gateway) setHanging(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hanging += d
	g.notifyLocked()
}

// --- request log -----------------------------------------------------------

// Request is one recorded Admin API request.
type Request struct {
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Query  string    `json:"query,omitempty"`
	Status int       `json:"status"` // 0 when dropped or abandoned
	Time   time.Time `json:"time"`
	// Bytes is the request's Content-Length (-1 unknown).
	Bytes   int64 `json:"bytes"`
	Dropped bool  `json:"dropped,omitempty"`
}

// recorder logs its request as soon as the answer's status is known, so a
// client that got an answer (or saw its connection dropped) finds its
// request in the log.
type recorder struct {
	http.ResponseWriter
	g       *Gateway
	req     Request
	logged  bool
	status  int
	dropped bool
}

func (r *recorder) logOnce() {
	if r.logged {
		return
	}
	r.logged = true
	r.req.Status, r.req.Dropped = r.status, r.dropped
	r.g.mu.Lock()
	r.g.log = append(r.g.log, r.req)
	r.g.notifyLocked()
	r.g.mu.Unlock()
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.logOnce()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (hijack, flush).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (g *Gateway) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.inflight++
		g.notifyLocked()
		g.mu.Unlock()
		rec := &recorder{ResponseWriter: w, g: g,
			req: Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Time: g.clock.Now(), Bytes: r.ContentLength}}
		defer func() {
			rec.logOnce() // abandoned (hung until the client left) or no body
			g.mu.Lock()
			g.inflight--
			g.notifyLocked()
			g.mu.Unlock()
		}()
		next.ServeHTTP(rec, r)
	})
}

// Requests returns a copy of the request log (control API calls excluded).
func (g *Gateway) Requests() []Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Request(nil), g.log...)
}

// Count is the number of recorded requests with this method ("" any) and
// path.
func (g *Gateway) Count(method, path string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.log {
		if (method == "" || r.Method == method) && r.Path == path {
			n++
		}
	}
	return n
}

// Pushes is the number of POST /config requests received (any answer).
func (g *Gateway) Pushes() int { return g.Count(http.MethodPost, "/config") }

// --- control API (for test/kongemu/cmd/kong-emulator and scripts) ----------

const controlPrefix = "/_emulator/"

// FaultSpec is the body of POST /_emulator/faults; unset fields keep their
// value.
type FaultSpec struct {
	Latency   *Duration `json:"latency,omitempty"`
	Hang      *bool     `json:"hang,omitempty"`
	Drop      *int      `json:"drop,omitempty"`
	BodyLimit *int64    `json:"body_limit,omitempty"`
	Script    *struct {
		Method string `json:"method"`
		Path   string `json:"path"`
		Steps  []Step `json:"steps"`
	} `json:"script,omitempty"`
}

// State is the answer of GET /_emulator/state.
type State struct {
	Hash     string         `json:"configuration_hash"`
	Loads    int            `json:"loads"`
	Restarts int            `json:"restarts"`
	Requests int            `json:"requests"`
	Pushes   int            `json:"pushes"`
	Hanging  int            `json:"hanging"`
	Counts   map[string]int `json:"counts"`
}

func (g *Gateway) controlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /_emulator/state", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		st := State{Hash: g.hash, Loads: g.loads, Restarts: g.restarts, Requests: len(g.log), Hanging: g.hanging, Counts: g.counts}
		g.mu.Unlock()
		st.Pushes = g.Pushes()
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET /_emulator/requests", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, g.Requests())
	})
	mux.HandleFunc("POST /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		var s FaultSpec
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			writeJSON(w, http.StatusBadRequest, message("bad fault spec: "+err.Error()))
			return
		}
		if s.Latency != nil {
			g.SetLatency(time.Duration(*s.Latency))
		}
		if s.Hang != nil {
			if *s.Hang {
				g.Hang()
			} else {
				g.Release()
			}
		}
		if s.Drop != nil {
			g.DropNext(*s.Drop)
		}
		if s.BodyLimit != nil {
			g.SetBodyLimit(*s.BodyLimit)
		}
		if s.Script != nil && len(s.Script.Steps) > 0 {
			g.Script(s.Script.Method, s.Script.Path, s.Script.Steps...)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		g.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /_emulator/release", func(w http.ResponseWriter, r *http.Request) {
		g.Release()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /_emulator/restart", func(w http.ResponseWriter, r *http.Request) {
		g.Restart()
		w.WriteHeader(http.StatusNoContent)
	})
}

// --- shared parse cache ------------------------------------------------------

// Cache remembers the outcome of the last few distinct bodies, so a fleet of
// emulated gateways in one process parses each configuration once and holds
// one copy of it. Safe for concurrent use; a nil *Cache parses every time.
type Cache struct {
	mu      sync.Mutex
	entries []*cacheEntry
}

type cacheEntry struct {
	key  [32]byte
	once sync.Once
	res  Result
	body []byte
}

const cacheSize = 4

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{} }

func (o checkOptions) fingerprint() string {
	names := sortedKeys(o.plugins)
	return fmt.Sprintf("oss=%v plugins=%s", o.oss, strings.Join(names, ","))
}

func parseAndCheck(body []byte, o checkOptions) Result {
	v, err := decode(body)
	if err != nil {
		return Result{Invalid: &ErrorBody{
			Name: "invalid declarative configuration", Code: codeInvalidDeclarative,
			Message: "failed parsing declarative configuration: " + err.Error(), Fields: map[string]any{}, unparsed: true,
		}}
	}
	// Kong takes the body itself when it holds _format_version, else its
	// "config" field (a string holding the configuration).
	if m, ok := v.(map[string]any); ok {
		if _, has := m["_format_version"]; !has {
			c, isStr := m["config"].(string)
			if !isStr {
				return Result{Invalid: &ErrorBody{
					Name: "invalid declarative configuration", Code: codeInvalidDeclarative,
					Message: "expected a declarative configuration", Fields: map[string]any{}, unparsed: true,
				}}
			}
			return parseAndCheck([]byte(c), o)
		}
	}
	return check(v, o)
}

// check returns the result for body and the bytes to keep as the loaded
// configuration (shared with other gateways when cached).
func (c *Cache) check(body []byte, o checkOptions) (Result, []byte) {
	if c == nil {
		return parseAndCheck(body, o), body
	}
	h := sha256.New()
	h.Write([]byte(o.fingerprint()))
	h.Write([]byte{0})
	h.Write(body)
	var key [32]byte
	copy(key[:], h.Sum(nil))
	c.mu.Lock()
	var e *cacheEntry
	for _, x := range c.entries {
		if x.key == key {
			e = x
			break
		}
	}
	if e == nil {
		e = &cacheEntry{key: key, body: body}
		c.entries = append(c.entries, e)
		if len(c.entries) > cacheSize {
			c.entries = c.entries[1:]
		}
	}
	c.mu.Unlock()
	// Parse outside the lock; gateways racing on the same body wait for one.
	e.once.Do(func() { e.res = parseAndCheck(e.body, o) })
	return e.res, e.body
}

func nodeUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// WaitHanging waits until at least n requests are hung (see Hang).
func (g *Gateway) WaitHanging(ctx context.Context, n int) error {
	return g.Wait(ctx, func(v View) bool { return v.Hanging >= n })
}
