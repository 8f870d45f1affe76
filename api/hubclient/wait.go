package hubclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// ErrRejected is what a *RejectedError wraps.
var ErrRejected = errors.New("configuration rejected")

// ErrNoSinks is returned by Wait when the stream has no sink.
var ErrNoSinks = errors.New("the stream has no sinks")

// Result is the outcome of Wait: every sink's status at one revision, sorted by name.
type Result struct {
	Stream     string
	Generation uint64
	Revision   uint64
	Sinks      []*confighubv1.SinkStatus
}

// RejectedError is returned by Wait when sinks (Rejected) rejected the generation; Result has every sink.
type RejectedError struct {
	Rejected []*confighubv1.SinkStatus
	Result   *Result
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

// Unwrap returns ErrRejected.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// EntityError is one entity a sink rejected, with the sink that said so.
type EntityError struct {
	Sink string
	*confighubv1.EntityError
}

// EntityErrors returns every entity error of every rejecting sink, in order.
func (e *RejectedError) EntityErrors() []EntityError {
	var out []EntityError
	for _, st := range e.Rejected {
		for _, ee := range st.GetEntityErrors() {
			out = append(out, EntityError{Sink: st.GetSink(), EntityError: ee})
		}
	}
	return out
}

// Tag returns the value of a "key:value" entity tag (such as KIC's k8s-name).
func Tag(tags []string, key string) (string, bool) {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, key+":"); ok {
			return v, true
		}
	}
	return "", false
}

// Wait watches the stream until every sink applied gen (or later) and returns each sink's status; a
// *RejectedError at the first rejection, ErrNoSinks, or ctx's error with the statuses so far.
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
		return resultOf(v, gen), err
	}
	return nil, err
}

func resultOf(v *StatusView, gen uint64) *Result {
	return &Result{Stream: v.stream, Generation: gen, Revision: v.Revision(), Sinks: v.Sinks()}
}
