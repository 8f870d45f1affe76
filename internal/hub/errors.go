package hub

import "errors"

// The hub's sentinels, with the gRPC code server/ maps each to.
var (
	ErrInvalid     = errors.New("invalid argument")                        // the request or configuration is malformed: InvalidArgument
	ErrTooLarge    = errors.New("configuration too large")                 // past --max-config-bytes or a byte budget: ResourceExhausted
	ErrNotFound    = errors.New("not found")                               // unknown stream or sink: NotFound
	ErrStale       = errors.New("expected_generation does not match")      // FailedPrecondition
	ErrUnavailable = errors.New("unavailable")                             // the store cannot be reached: Unavailable
	ErrLimit       = errors.New("limit reached")                           // a bound of Limits, named by its flag: ResourceExhausted
	ErrInUse       = errors.New("in use")                                  // what is to be deleted is used (sinks read the stream): FailedPrecondition
	ErrUnsupported = errors.New("not supported")                           // the store cannot do it: Unimplemented
	ErrNotFailing  = errors.New("the sink is neither FAILED nor DEGRADED") // a sink diff of a sink that is not failing: FailedPrecondition
)
