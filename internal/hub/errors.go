package hub

import "errors"

var (
	// ErrInvalid: the request or configuration is malformed (InvalidArgument).
	ErrInvalid = errors.New("invalid argument")
	// ErrTooLarge: the configuration exceeds --max-config-bytes
	// (ResourceExhausted).
	ErrTooLarge = errors.New("configuration too large")
	// ErrNotFound: unknown stream or sink (NotFound).
	ErrNotFound = errors.New("not found")
	// ErrStale: expected_generation does not match (FailedPrecondition).
	ErrStale = errors.New("expected_generation does not match")
	// ErrUnavailable: the store cannot be reached (Unavailable).
	ErrUnavailable = errors.New("unavailable")
)
