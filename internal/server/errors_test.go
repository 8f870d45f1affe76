package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/confighub/confighub/internal/hub"
)

// Every sentinel the hub wraps maps to its documented code (docs/api.md,
// docs/architecture.md), keeping the hub's message; a gRPC status passes through unchanged.
func TestToStatusMapsHubErrors(t *testing.T) {
	cases := []struct {
		err  error
		code codes.Code
	}{
		{fmt.Errorf("%w: stream %q: _format_version is missing", hub.ErrInvalid, "default"), codes.InvalidArgument},
		{fmt.Errorf("%w: configuration of 9 bytes exceeds the limit", hub.ErrTooLarge), codes.ResourceExhausted},
		{fmt.Errorf("%w: stream %q has no configuration", hub.ErrNotFound, "x"), codes.NotFound},
		{fmt.Errorf("%w: stream %q is at generation 2, expected 7", hub.ErrStale, "default"), codes.FailedPrecondition},
		{fmt.Errorf("%w: store: disk full", hub.ErrUnavailable), codes.Unavailable},
		{fmt.Errorf("read: %w", context.Canceled), codes.Canceled},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{errors.New("a bug"), codes.Internal},
	}
	for _, c := range cases {
		st, _ := status.FromError(toStatus(c.err))
		if st.Code() != c.code || st.Message() != c.err.Error() {
			t.Errorf("%v: got %s %q, want %s with the hub's message", c.err, st.Code(), st.Message(), c.code)
		}
	}
	in := status.Error(codes.PermissionDenied, "no")
	if got := toStatus(in); got != in {
		t.Errorf("a status error was rewritten: %v", got)
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}

// A hub error that names a large input becomes a bounded status message
// that says how much was cut.
func TestToStatusBoundsTheMessage(t *testing.T) {
	long := strings.Repeat("é", 10<<10) // 20 KiB of 2-byte runes
	st, _ := status.FromError(toStatus(fmt.Errorf("%w: sink %q: address %s", hub.ErrInvalid, "s", long)))
	if st.Code() != codes.InvalidArgument || len(st.Message()) > maxMessageBytes+64 ||
		!strings.HasPrefix(st.Message(), `invalid argument: sink "s": address éé`) || !strings.HasSuffix(st.Message(), "more bytes cut)") ||
		!utf8.ValidString(st.Message()) {
		t.Fatalf("%s, %d bytes: %.100q...%q", st.Code(), len(st.Message()), st.Message(), st.Message()[max(0, len(st.Message())-40):])
	}
}
