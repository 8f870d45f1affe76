// Package kongapi is the one reading of a Kong Admin API (or Konnect) HTTP answer as a sink error
// code, shared by kong, kong-db and konnect so they cannot disagree (TestStatusCodes).
package kongapi

import (
	"net/http"

	"github.com/confighub/confighub/sink"
)

// Classify returns the code of an HTTP status Kong answered with, and
// whether the failure is permanent (not retried before a new generation).
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
		// 400 (schema, entity errors), 404, 409 (uniqueness): refused as it is.
		return sink.CodeRejected, true
	default:
		// 5xx and anything Kong does not document: the gateway failed.
		return sink.CodeUnavailable, false
	}
}
