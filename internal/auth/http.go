package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrNoToken: an HTTP request without an "Authorization: Bearer <token>"
// header.
var ErrNoToken = errors.New("no bearer token")

// CheckRequest checks the bearer token of an HTTP request against need,
// for the hub's HTTP endpoints (the status page's API, the
// profiles). On a refusal it returns the status to answer and an error
// that never quotes the token: 401 for no token (ErrNoToken) or an unknown
// one (ErrUnknownToken), with WWW-Authenticate set on w; 403 for a role
// below need (ErrPermissionDenied). The caller writes the body in its own
// format and logs.
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
