package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
)

// Controller pushes Kong configurations to a hub, waits for its sinks and
// reports every rejected entity as the Kubernetes object that produced it.
type Controller struct {
	Hub *hubclient.Client
	Out io.Writer
}

// errNotApplied: the push was acknowledged, the wait for the sinks failed.
var errNotApplied = errors.New("was not applied by every sink")

// Rejection is one entity a sink rejected.
type Rejection struct {
	Sink   string
	Object string   // "Kind namespace/name", from KIC's k8s-* tags
	Entity string   // "route name"
	Errors []string // "field: message"
}

// Sync pushes raw to stream and waits (until ctx ends) for every sink to
// apply it. A rejection is not an error: Sync prints and returns it.
func (c *Controller) Sync(ctx context.Context, stream string, raw []byte, f confighubv1.Format) ([]Rejection, error) {
	pushed, err := c.Hub.Push(ctx, hubclient.Push{Stream: stream, Config: raw, Format: f})
	if err != nil {
		return nil, fmt.Errorf("push to stream %q: %w", stream, err)
	}
	gen := pushed.GetGeneration()
	res, err := c.Hub.Wait(ctx, stream, gen)
	var rej *hubclient.RejectedError
	switch {
	case errors.As(err, &rej):
	case err != nil && res != nil:
		return nil, fmt.Errorf("stream %q generation %d %w (%w); still applying: %s", stream, gen, errNotApplied, err, pending(res))
	case err != nil:
		return nil, fmt.Errorf("stream %q generation %d %w: %w", stream, gen, errNotApplied, err)
	default:
		fmt.Fprintf(c.Out, "stream %s generation %d: applied by %d sinks\n", stream, gen, len(res.Sinks))
		return nil, nil
	}
	var out []Rejection
	for _, st := range rej.Rejected {
		if len(st.GetEntityErrors()) == 0 { // the whole configuration was refused
			fmt.Fprintf(c.Out, "stream %s generation %d: sink %s rejected it: %s\n", stream, gen, st.GetSink(), st.GetLastError())
		}
	}
	for _, ee := range rej.EntityErrors() {
		r := Rejection{Sink: ee.Sink, Object: object(ee.GetEntityTags()), Entity: ee.GetEntityType() + " " + cmp.Or(ee.GetEntityName(), ee.GetEntityId())}
		for _, fe := range ee.GetErrors() {
			r.Errors = append(r.Errors, strings.TrimPrefix(fe.GetField()+": "+fe.GetMessage(), ": "))
		}
		fmt.Fprintf(c.Out, "stream %s generation %d: sink %s rejected %s (%s): %s\n",
			stream, gen, r.Sink, r.Object, r.Entity, strings.Join(r.Errors, "; "))
		out = append(out, r)
	}
	return out, nil
}

// object names the Kubernetes object an entity came from.
func object(tags []string) string {
	kind, _ := hubclient.Tag(tags, "k8s-kind")
	ns, _ := hubclient.Tag(tags, "k8s-namespace")
	name, ok := hubclient.Tag(tags, "k8s-name")
	switch {
	case !ok:
		return "an entity with no k8s-name tag"
	case ns == "":
		return kind + " " + name // cluster-scoped, e.g. KongClusterPlugin
	}
	return kind + " " + ns + "/" + name
}

// pending lists the sinks that had not applied when the wait ended.
func pending(res *hubclient.Result) string {
	var names []string
	for _, st := range res.Sinks {
		if st.GetAppliedGeneration() < res.Generation {
			names = append(names, st.GetSink()+" ("+strings.ToLower(strings.TrimPrefix(st.GetState().String(), "SINK_STATE_"))+")")
		}
	}
	return strings.Join(names, ", ")
}
