package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/pprof"
	"strconv"

	"github.com/confighub/confighub/internal/auth"
)

// MaxProfileSeconds bounds the seconds parameter of every profile: a CPU
// profile or trace costs the hub CPU for as long as it runs, and a delta
// profile holds its request open as long.
const MaxProfileSeconds = 60

// NamedProfiles returns the runtime profiles served at
// /debug/pprof/<name>, a fresh slice each call. block and mutex stay
// empty: the hub sets neither rate (their sampling costs every contended
// lock and channel operation).
func NamedProfiles() []string {
	return []string{"heap", "goroutine", "allocs", "block", "mutex", "threadcreate"}
}

// Authorizer checks the bearer token of an HTTP request against a role
// (auth.Authenticator implements it): on a refusal, the status to answer
// and an error that never quotes the token.
type Authorizer interface {
	CheckRequest(w http.ResponseWriter, r *http.Request, need auth.Role) (auth.Principal, int, error)
}

var _ Authorizer = (*auth.Authenticator)(nil)

// profiling serves Go's profiles under /debug/pprof/ on the listener's own
// mux (net/http/pprof's handlers, registered one by one).
type profiling struct {
	// auth, when set, requires an admin token for every profile.
	auth Authorizer
	log  *slog.Logger
	// running holds the one CPU profile or trace allowed at a time.
	running chan struct{}
	// started, when set (tests), is called as a request that runs for a
	// while starts (see timed).
	started func()
}

func (p *profiling) register(mux *http.ServeMux) {
	mux.Handle("/debug/pprof/", p.admin(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", p.admin(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/symbol", p.admin(http.HandlerFunc(pprof.Symbol)))
	// Profile reads seconds as an integer (a fraction would silently
	// become its default 30 s), Trace as a number.
	mux.Handle("/debug/pprof/profile", p.admin(bounded(true, p.exclusive("CPU profile", p.timed(false, http.HandlerFunc(pprof.Profile))))))
	mux.Handle("/debug/pprof/trace", p.admin(bounded(false, p.exclusive("trace", p.timed(false, http.HandlerFunc(pprof.Trace))))))
	for _, name := range NamedProfiles() {
		mux.Handle("/debug/pprof/"+name, p.admin(bounded(true, p.timed(true, pprof.Handler(name)))))
	}
}

// admin refuses a request without an admin token when auth is set, with
// the status page's answers (auth.Authenticator.CheckRequest): 401, 403.
func (p *profiling) admin(next http.Handler) http.Handler {
	if p.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, code, err := p.auth.CheckRequest(w, r, auth.RoleAdmin)
		if err != nil {
			if !errors.Is(err, auth.ErrNoToken) {
				p.log.Warn("profiling: token refused", "path", r.URL.Path, "error", err)
			}
			http.Error(w, err.Error(), code)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), who)))
	})
}

// bounded answers 400 to a seconds parameter that is not a positive
// number (an integer when integer is set) or is over MaxProfileSeconds.
func bounded(integer bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.FormValue("seconds"); s != "" {
			if err := checkSeconds(s, integer); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func checkSeconds(s string, integer bool) error {
	var (
		sec float64
		err error
	)
	if integer {
		var n int64
		n, err = strconv.ParseInt(s, 10, 64)
		sec = float64(n)
	} else {
		sec, err = strconv.ParseFloat(s, 64)
	}
	kind := "number"
	if integer {
		kind = "integer"
	}
	switch {
	case err != nil || math.IsNaN(sec) || sec <= 0:
		return fmt.Errorf("seconds=%s: want a positive %s of at most %d", s, kind, MaxProfileSeconds)
	case sec > MaxProfileSeconds:
		return fmt.Errorf("seconds=%s is over the maximum of %d: take several shorter profiles", s, MaxProfileSeconds)
	}
	return nil
}

// exclusive lets one CPU profile or trace run at a time and answers 409
// to the others (the runtime would refuse a second CPU profile with an
// obscure 500).
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
			// The token's name, never the token: who to ask about the
			// CPU the profile costs.
			attrs = append(attrs, "token", who.Name)
		}
		p.log.Info("profiling: "+what+" started", attrs...)
		next.ServeHTTP(w, r)
	})
}

// timed calls the started hook before a request that runs for a while: a
// CPU profile or a trace (once it holds the slot), or, when delta is set,
// a named profile given seconds (a delta profile). They run until seconds
// pass or the request's context ends, which Shutdown alone never does
// (see WithBaseContext).
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
