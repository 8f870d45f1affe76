package metrics

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/pprof"
	"strconv"

	"github.com/confighub/confighub/internal/auth"
)

// MaxProfileSeconds bounds the seconds parameter of every profile.
const MaxProfileSeconds = 60

// NamedProfiles returns the runtime profiles served at /debug/pprof/<name>;
// block and mutex stay empty (the hub sets neither sampling rate).
func NamedProfiles() []string {
	return []string{"heap", "goroutine", "allocs", "block", "mutex", "threadcreate"}
}

// profiling serves net/http/pprof's handlers under /debug/pprof/.
type profiling struct {
	auth    *auth.Authenticator // when set, every profile needs an admin token
	log     *slog.Logger
	running chan struct{} // holds the one CPU profile or trace at a time
	started func()        // tests: called as a request that runs a while starts (timed)
}

func (p *profiling) register(mux *http.ServeMux) {
	admin := func(path string, h http.Handler) {
		mux.Handle("/debug/pprof/"+path, p.auth.Require(auth.RoleAdmin, p.log, "profiling", func(w http.ResponseWriter, code int, err error) {
			http.Error(w, err.Error(), code)
		}, h))
	}
	admin("", http.HandlerFunc(pprof.Index))
	admin("cmdline", http.HandlerFunc(pprof.Cmdline))
	admin("symbol", http.HandlerFunc(pprof.Symbol))
	// Profile reads seconds as an integer (else its default 30 s), Trace as a number.
	admin("profile", bounded(true, p.exclusive("CPU profile", p.timed(false, http.HandlerFunc(pprof.Profile)))))
	admin("trace", bounded(false, p.exclusive("trace", p.timed(false, http.HandlerFunc(pprof.Trace)))))
	for _, name := range NamedProfiles() {
		admin(name, bounded(true, p.timed(true, pprof.Handler(name))))
	}
}

// bounded answers 400 to seconds that are not a positive number (integer) up to MaxProfileSeconds.
func bounded(integer bool, next http.Handler) http.Handler {
	kind := "number"
	if integer {
		kind = "integer"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := r.FormValue("seconds")
		sec, err := strconv.ParseFloat(s, 64)
		if integer {
			var n int64
			n, err = strconv.ParseInt(s, 10, 64)
			sec = float64(n)
		}
		switch {
		case s == "":
		case err != nil || math.IsNaN(sec) || sec <= 0:
			http.Error(w, fmt.Sprintf("seconds=%s: want a positive %s of at most %d", s, kind, MaxProfileSeconds), http.StatusBadRequest)
			return
		case sec > MaxProfileSeconds:
			http.Error(w, fmt.Sprintf("seconds=%s is over the maximum of %d: take several shorter profiles", s, MaxProfileSeconds), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// exclusive lets one CPU profile or trace run at a time and answers 409 to the others.
func (p *profiling) exclusive(what string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case p.running <- struct{}{}:
		default:
			http.Error(w, "a CPU profile or trace is already running (one at a time): try again when it ends", http.StatusConflict)
			return
		}
		defer func() { <-p.running }()
		attrs := []any{"seconds", r.FormValue("seconds"), "remote", r.RemoteAddr}
		if who, ok := auth.FromContext(r.Context()); ok {
			// The token's name, never the token.
			attrs = append(attrs, "token", who.Name)
		}
		p.log.Info("profiling: "+what+" started", attrs...)
		next.ServeHTTP(w, r)
	})
}

// timed calls the started hook before a request that runs a while (with delta, only a named profile given seconds).
func (p *profiling) timed(delta bool, next http.Handler) http.Handler {
	if p.started == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !delta || r.FormValue("seconds") != "" {
			p.started()
		}
		next.ServeHTTP(w, r)
	})
}
