package robustness

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/confighub/confighub/test/kongemu"
)

// gateway is an emulated Kong gateway (test/kongemu, with its fault
// injection) behind a recorder of every POST /config: the content marker
// of its body, the emulator's hash of it and the answer's status, in
// arrival order.
type gateway struct {
	name   string
	stream string
	emu    *kongemu.Gateway
	srv    *http.Server
	url    string

	mu    sync.Mutex
	loads []Load
}

var markerRE = regexp.MustCompile(`"rb-(c[0-9]+)-0"`)

// marker is the content id a configuration body carries ("" when none).
func marker(body []byte) string {
	if m := markerRE.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}

func startGateway(name, stream string, cache *kongemu.Cache) (*gateway, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gateway{name: name, stream: stream, emu: kongemu.New(kongemu.WithCache(cache))}
	g.srv = &http.Server{Handler: g.wrap(g.emu.Handler()), ReadHeaderTimeout: 10 * time.Second}
	g.url = "http://" + ln.Addr().String()
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// statusWriter keeps the answer's status; Unwrap lets the emulator hijack
// the connection (a dropped answer keeps status 0).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (g *gateway) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/config" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client left mid-body: nothing reached the gateway
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		g.mu.Lock()
		i := len(g.loads)
		g.loads = append(g.loads, Load{Content: marker(body), EmuHash: kongemu.ConfigHash(body)})
		g.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			g.mu.Lock()
			g.loads[i].Status = sw.status
			g.mu.Unlock()
		}()
		next.ServeHTTP(sw, r)
	})
}

func (g *gateway) recorded() []Load {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Load(nil), g.loads...)
}

func (g *gateway) final() GatewayFinal {
	return GatewayFinal{Hash: g.emu.Hash(), Content: marker(g.emu.Config())}
}

func (g *gateway) close() {
	_ = g.srv.Close()
	_ = g.emu.Close()
}
