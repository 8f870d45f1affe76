package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
)

// codeOf maps a hub error to its gRPC code; toStatus is the one place errors become statuses.
func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, hub.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, hub.ErrTooLarge), errors.Is(err, hub.ErrLimit):
		return codes.ResourceExhausted
	case errors.Is(err, hub.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, hub.ErrStale), errors.Is(err, hub.ErrInUse), errors.Is(err, hub.ErrNotFailing):
		return codes.FailedPrecondition
	case errors.Is(err, hub.ErrUnavailable):
		return codes.Unavailable
	case errors.Is(err, hub.ErrUnsupported):
		return codes.Unimplemented
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), engine.CutText(err.Error(), maxMessageBytes))
}

// maxMessageBytes bounds the message of an error status, which may quote what a client sent.
const maxMessageBytes = 4 << 10
