package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// ErrNoToken: an HTTP request without an "Authorization: Bearer <token>" header.
var ErrNoToken = errors.New("no bearer token")

// CheckRequest checks an HTTP request's bearer token against need; a
// refusal is 401 (ErrNoToken, ErrUnknownToken; WWW-Authenticate set on w) or
// 403 (ErrPermissionDenied), with an error that never quotes the token.
func (a *Authenticator) CheckRequest(w http.ResponseWriter, r *http.Request, need Role) (Principal, int, error) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="confighub"`)
		return Principal{}, http.StatusUnauthorized, fmt.Errorf("%w: a bearer token with the %s role is needed (Authorization: Bearer <token>)", ErrNoToken, need)
	}
	p, err := a.Check(strings.TrimSpace(tok), need)
	switch {
	case err == nil:
		return p, http.StatusOK, nil
	case errors.Is(err, ErrPermissionDenied):
		return Principal{}, http.StatusForbidden, err
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="confighub"`)
	return Principal{}, http.StatusUnauthorized, err
}

// Require serves next the requests CheckRequest lets through, the caller in
// their context; a refusal is logged (but for a missing token) and answered
// by refuse. A nil Authenticator lets every request through.
func (a *Authenticator) Require(need Role, log *slog.Logger, what string, refuse func(http.ResponseWriter, int, error), next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, code, err := a.CheckRequest(w, r, need)
		if err != nil {
			if !errors.Is(err, ErrNoToken) {
				log.Warn(what+": token refused", "path", r.URL.Path, "error", err)
			}
			refuse(w, code, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), p)))
	})
}
