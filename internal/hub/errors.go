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
	// ErrLimit: a bound of Limits is reached; the message names its flag
	// (ResourceExhausted).
	ErrLimit = errors.New("limit reached")
	// ErrInUse: what is to be deleted is still used, as a stream that
	// sinks read (FailedPrecondition).
	ErrInUse = errors.New("in use")
	// ErrUnsupported: the store cannot do what is asked (Unimplemented).
	ErrUnsupported = errors.New("not supported")
)
