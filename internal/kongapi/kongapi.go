// Package kongapi is the one reading of a Kong Admin API (or Konnect) HTTP
// answer as a sink error code, used by every sink that speaks to Kong: the
// DB-less kong sink and the diff-sync sinks (kong-db, konnect). One table,
// so the sinks cannot disagree on an answer (a 408 is retried by all of
// them); tested by TestStatusCodes.
package kongapi

import (
	"net/http"

	"github.com/confighub/confighub/sink"
)

// Classify returns the code of an HTTP status Kong answered with, and
// whether the failure is permanent (the same configuration would be refused
// again, so it is not retried before a new generation).
func Classify(status int) (code sink.Code, permanent bool) {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// The credentials, not the configuration: retried until fixed.
		return sink.CodeUnauthorized, false
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return sink.CodeTimeout, false
	case status == http.StatusTooManyRequests:
		return sink.CodeRateLimited, false
	case status == http.StatusRequestEntityTooLarge:
		return sink.CodeTooLarge, true
	case status >= 400 && status < 500:
		// 400 (schema violations, entity errors), 404, 409 (uniqueness):
		// this configuration is refused as it is.
		return sink.CodeRejected, true
	default:
		// 5xx and anything Kong does not document: the gateway failed.
		return sink.CodeUnavailable, false
	}
}
