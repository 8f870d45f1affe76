package hubclient

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
	f := &fold{gen: gen, sinks: map[string]*confighubv1.SinkStatus{}}
	var res *Result
	var rej *RejectedError
	errDone := errors.New("done")
	err := c.Watch(ctx, stream, 0, func(ev *confighubv1.WatchStatusResponse) error {
		f.apply(ev)
		f.rev = ev.GetRevision()
		if !f.ready {
			return nil
		}
		switch {
		case f.rejected > 0:
			res = f.result(ev.GetRevision())
			rej = &RejectedError{Result: res}
			for _, st := range res.Sinks {
				if f.classify(st) == rejected {
					rej.Rejected = append(rej.Rejected, st)
				}
			}
			return errDone
		case len(f.sinks) == 0:
			return ErrNoSinks
		case f.pending == 0:
			res = f.result(ev.GetRevision())
			return errDone
		}
		return nil
	})
	switch {
	case rej != nil:
		return nil, rej
	case res != nil:
		return res, nil
	case f.ready && ctx.Err() != nil:
		// What each sink had done when the time ran out.
		return f.result(f.rev), err
	}
	return nil, err
}

type outcome int

const (
	pending outcome = iota
	applied
	rejected
)

// fold keeps the sinks' newest statuses and how many of them have applied,
// rejected, or not yet done either with the generation waited for.
type fold struct {
	gen, rev          uint64
	stream            string
	sinks             map[string]*confighubv1.SinkStatus
	pending, rejected int
	// ready: a snapshot was seen, so sinks is the whole stream.
	ready bool
}

func (f *fold) classify(st *confighubv1.SinkStatus) outcome {
	switch {
	case st.GetAppliedGeneration() >= f.gen:
		return applied
	case st.GetRejectedGeneration() >= f.gen:
		return rejected
	}
	return pending
}

func (f *fold) count(st *confighubv1.SinkStatus, d int) {
	switch f.classify(st) {
	case pending:
		f.pending += d
	case rejected:
		f.rejected += d
	}
}

func (f *fold) put(st *confighubv1.SinkStatus) {
	if old := f.sinks[st.GetSink()]; old != nil {
		f.count(old, -1)
	}
	f.sinks[st.GetSink()] = st
	f.count(st, 1)
}

func (f *fold) apply(ev *confighubv1.WatchStatusResponse) {
	switch {
	case ev.GetSnapshot() != nil:
		clear(f.sinks)
		f.pending, f.rejected, f.ready = 0, 0, true
		f.stream = ev.GetSnapshot().GetStream()
		for _, st := range ev.GetSnapshot().GetSinks() {
			f.put(st)
		}
	case ev.GetSink() != nil:
		f.put(ev.GetSink())
	case ev.GetSinkRemoved() != "":
		if old := f.sinks[ev.GetSinkRemoved()]; old != nil {
			f.count(old, -1)
			delete(f.sinks, ev.GetSinkRemoved())
		}
	}
}

func (f *fold) result(rev uint64) *Result {
	r := &Result{Stream: f.stream, Generation: f.gen, Revision: rev, Sinks: make([]*confighubv1.SinkStatus, 0, len(f.sinks))}
	for _, st := range f.sinks {
		r.Sinks = append(r.Sinks, st)
	}
	sort.Slice(r.Sinks, func(i, j int) bool { return r.Sinks[i].GetSink() < r.Sinks[j].GetSink() })
	return r
}
