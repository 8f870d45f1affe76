package hubclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// ErrRejected is what a *RejectedError wraps: errors.Is(err, ErrRejected)
// tells a rejection from a broken connection or an ended context.
var ErrRejected = errors.New("configuration rejected")

// ErrNoSinks is returned by Wait when the stream has no sink: nothing would
// ever apply the generation (a mistyped stream name is the usual cause).
var ErrNoSinks = errors.New("the stream has no sinks")

// Result is the outcome of Wait: the status of every sink of the stream
// when the wait ended, sorted by sink name, consistent with one revision
// of the hub's status.
type Result struct {
	Stream     string
	Generation uint64
	Revision   uint64
	Sinks      []*confighubv1.SinkStatus
}

// RejectedError is returned by Wait when a sink rejected the generation
// (or a later one that replaced it before that sink applied it). Get it
// with errors.As.
type RejectedError struct {
	// Rejected are the sinks that rejected it, sorted by name: GetSink,
	// GetRejectedGeneration, GetLastErrorCode, GetLastError and
	// GetEntityErrors say what and why.
	Rejected []*confighubv1.SinkStatus
	// Result holds every sink of the stream at that point.
	Result *Result
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d of stream %q rejected by", e.Result.Generation, e.Result.Stream)
	for i, st := range e.Rejected {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " sink %s: %s", st.GetSink(), st.GetLastError())
		if n := len(st.GetEntityErrors()); n > 0 {
			fmt.Fprintf(&b, " (%d entity errors)", n)
		}
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrRejected) true.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// EntityError is one entity a sink rejected, with the sink that said so.
type EntityError struct {
	Sink string
	*confighubv1.EntityError
}

// EntityErrors returns every entity error of every rejecting sink, in sink
// order and then in the order the destination reported them.
func (e *RejectedError) EntityErrors() []EntityError {
	var out []EntityError
	for _, st := range e.Rejected {
		for _, ee := range st.GetEntityErrors() {
			out = append(out, EntityError{Sink: st.GetSink(), EntityError: ee})
		}
	}
	return out
}

// Tag returns the value of a "key:value" entity tag, such as the
// k8s-kind, k8s-namespace and k8s-name tags the Kong Ingress Controller
// puts on every entity it generates.
func Tag(tags []string, key string) (string, bool) {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, key+":"); ok {
			return v, true
		}
	}
	return "", false
}

// Wait follows the stream's status (by Watch, so it resumes after a
// disconnect) until every sink of the stream has applied generation gen or
// a later one, and returns each sink's status. It returns a *RejectedError
// as soon as a sink rejected gen (or a later generation before applying
// gen), ErrNoSinks when the stream has no sink, and ctx's error when ctx
// ends first, then with each sink's status at that point (to name the
// sinks still applying) once the watch had started. A sink added or
// removed meanwhile is counted in or out.
func (c *Client) Wait(ctx context.Context, stream string, gen uint64) (*Result, error) {
	v := NewStatusView(gen, nil)
	var res *Result
	var rej *RejectedError
	errDone := errors.New("done")
	err := c.Watch(ctx, stream, 0, func(ev *confighubv1.WatchStatusResponse) error {
		v.Apply(ev)
		if !v.Ready() {
			return nil
		}
		_, rejected, pending := v.Counts()
		switch {
		case rejected > 0:
			res = resultOf(v, gen)
			rej = &RejectedError{Result: res}
			for _, st := range res.Sinks {
				if OutcomeOf(st, gen) == Rejected {
					rej.Rejected = append(rej.Rejected, st)
				}
			}
			return errDone
		case v.Len() == 0:
			return ErrNoSinks
		case pending == 0:
			res = resultOf(v, gen)
			return errDone
		}
		return nil
	})
	switch {
	case rej != nil:
		return nil, rej
	case res != nil:
		return res, nil
	case v.Ready() && ctx.Err() != nil:
		// What each sink had done when the time ran out.
		return resultOf(v, gen), err
	}
	return nil, err
}

func resultOf(v *StatusView, gen uint64) *Result {
	return &Result{Stream: v.stream, Generation: gen, Revision: v.Revision(), Sinks: v.Sinks()}
}
