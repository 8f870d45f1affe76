package sink

import "slices"

// Code is why an apply failed (last_error_code, the metrics' reason label).
type Code string

// The closed set; rejected, invalid and too-large are permanent (not sent
// again), unreachable is a health poll's finding, the rest are retried.
const (
	CodeRejected     Code = "rejected"
	CodeInvalid      Code = "invalid" // cannot be rendered for the destination
	CodeTooLarge     Code = "too-large"
	CodeRateLimited  Code = "rate-limited"
	CodeTimeout      Code = "timeout"     // no answer in time, or HTTP 408/504
	CodeUnavailable  Code = "unavailable" // unreachable or failed: refused, 5xx, unwritable file
	CodeUnreachable  Code = "unreachable" // applied, then found down
	CodeUnauthorized Code = "unauthorized"
	CodeInternal     Code = "internal" // the sink's own failure (a panic)
)

// Codes is the closed set, in the order docs/api.md lists it.
var Codes = []Code{CodeRejected, CodeInvalid, CodeTooLarge, CodeRateLimited, CodeTimeout,
	CodeUnavailable, CodeUnreachable, CodeUnauthorized, CodeInternal}

// Known reports whether c is one of Codes.
func (c Code) Known() bool { return slices.Contains(Codes, c) }

// ParseCode maps a free-form code onto the set: unknown ones become CodeRejected when permanent, else CodeUnavailable.
func ParseCode(s string, permanent bool) Code {
	if c := Code(s); c.Known() {
		return c
	}
	if permanent {
		return CodeRejected
	}
	return CodeUnavailable
}
