package sink

import "slices"

// Code is why an apply failed, in one word a controller can act on:
// status's last_error_code and the metrics' reason label. The set below is
// closed (docs/api.md); ParseCode maps any other text onto it.
type Code string

const (
	// CodeRejected: the destination refused this configuration. Permanent:
	// the same generation is not sent again.
	CodeRejected Code = "rejected"
	// CodeInvalid: the configuration cannot be turned into what this
	// destination takes (render, convert). Permanent.
	CodeInvalid Code = "invalid"
	// CodeTooLarge: the configuration is larger than the destination takes.
	// Permanent.
	CodeTooLarge Code = "too-large"
	// CodeRateLimited: the destination asked to wait (Retry-After). Retried.
	CodeRateLimited Code = "rate-limited"
	// CodeTimeout: no answer within the sink's timeout, or the destination
	// timed out itself (HTTP 408, 504). Retried.
	CodeTimeout Code = "timeout"
	// CodeUnavailable: the destination could not be reached or failed
	// (connection refused, HTTP 5xx, a file that cannot be written). Retried.
	CodeUnavailable Code = "unavailable"
	// CodeUnreachable: the destination applied the generation, and its
	// health poll (a Runner) has since found it down.
	CodeUnreachable Code = "unreachable"
	// CodeUnauthorized: the destination refused the credentials (HTTP 401,
	// 403). Retried: fixing the credentials needs no new generation.
	CodeUnauthorized Code = "unauthorized"
	// CodeInternal: the sink failed on its own side (a panic, a local
	// step of a diff sync). Retried.
	CodeInternal Code = "internal"
)

// Codes is the closed set, in the order docs/api.md lists it.
var Codes = []Code{CodeRejected, CodeInvalid, CodeTooLarge, CodeRateLimited, CodeTimeout,
	CodeUnavailable, CodeUnreachable, CodeUnauthorized, CodeInternal}

// Known reports whether c is one of Codes.
func (c Code) Known() bool { return slices.Contains(Codes, c) }

// ParseCode maps a free-form code (a plugin's) onto the closed set: a known
// code is kept, another is CodeRejected when permanent, else
// CodeUnavailable.
func ParseCode(s string, permanent bool) Code {
	if c := Code(s); c.Known() {
		return c
	}
	if permanent {
		return CodeRejected
	}
	return CodeUnavailable
}
