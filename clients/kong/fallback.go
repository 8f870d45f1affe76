package kong

import (
	"context"
	"fmt"
	"strings"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/kongraph"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/sink"
)

// MaxFallbackRounds bounds the rebuilds of a fallback rejected for further entities.
const MaxFallbackRounds = 3

type runningFallback struct {
	forHash string
	body    []byte
	result  *sink.Degraded
}

// applyFallback applies a fallback of cfg after the gateway rejected it
// whole: a *sink.Degraded, or the rejection noting why no fallback ran.
func (s *Sink) applyFallback(ctx context.Context, cfg *config.Config, body []byte, rejection *sink.Error) error {
	doc, err := kongraph.Parse(body)
	if err != nil {
		return withNote(rejection, "no fallback: "+err.Error())
	}
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	var prev *kongraph.Doc
	if held != nil {
		prev, _ = kongraph.Parse(held) // unreadable: no previous versions
	}
	messages := map[int]string{}
	errTags := map[int][]string{} // the gateway's tags, shown when the entity has none
	var rejected []int
	add := func(errs []*confighubv1.EntityError) (added int, keptNamed bool) {
		for _, ee := range errs {
			i, ok := doc.Find(ee.GetEntityType(), ee.GetEntityId(), ee.GetEntityName())
			if !ok {
				continue
			}
			if _, seen := messages[i]; seen {
				// Named again: its kept previous version is refused too.
				keptNamed = true
				continue
			}
			messages[i] = entityMessage(ee)
			errTags[i] = ee.GetEntityTags()
			rejected = append(rejected, i)
			added++
		}
		return added, keptNamed
	}
	if n, _ := add(rejection.EntityErrors); n == 0 {
		return withNote(rejection, "no fallback: the gateway's errors name no entity of the configuration")
	}
	var last error
	for round := 1; round <= MaxFallbackRounds; round++ {
		fb, excluded, err := doc.Fallback(rejected, prev)
		if err != nil {
			return withNote(rejection, "no fallback: "+err.Error())
		}
		err = s.post(ctx, fb)
		if err == nil {
			d := &sink.Degraded{Hash: config.Hash(fb), Excluded: toProto(excluded, messages, errTags), Rejection: rejection}
			s.accepted(fb, &runningFallback{forHash: cfg.Hash, body: fb, result: d})
			s.logger.Warn("gateway runs a fallback", "address", s.address, "generation", cfg.Generation,
				"excluded", len(excluded), "round", round)
			return d
		}
		last = err
		se, ok := sink.AsError(err)
		if !ok || se.Code != sink.CodeRejected {
			// Unreachable or timeout: the engine retries the generation.
			return err
		}
		added, keptNamed := add(se.EntityErrors)
		if keptNamed {
			prev = nil // a kept previous version was refused: keep none
		}
		if added == 0 && !keptNamed {
			break
		}
	}
	return withNote(rejection, fmt.Sprintf("the gateway rejected its fallback too (%v)", last))
}

func withNote(e *sink.Error, note string) *sink.Error {
	c := *e
	c.Message = e.Message + "; " + note
	return &c
}

// entityMessage is one line of an entity's errors: "field: message; ...".
func entityMessage(ee *confighubv1.EntityError) string {
	parts := make([]string, 0, len(ee.GetErrors()))
	for _, fe := range ee.GetErrors() {
		if fe.GetField() != "" {
			parts = append(parts, fe.GetField()+": "+fe.GetMessage())
		} else {
			parts = append(parts, fe.GetMessage())
		}
	}
	return strings.Join(parts, "; ")
}

func toProto(xs []kongraph.Excluded, messages map[int]string, errTags map[int][]string) []*confighubv1.ExcludedEntity {
	out := make([]*confighubv1.ExcludedEntity, 0, len(xs))
	for _, x := range xs {
		tags := x.Tags
		if len(tags) == 0 {
			tags = errTags[x.Index]
		}
		name := x.Name
		if redact.NameIsSecret(x.Type) {
			name = "" // a key-auth credential is named by its key
		}
		out = append(out, &confighubv1.ExcludedEntity{
			EntityType: x.Type, EntityName: name, EntityId: x.ID, EntityTags: tags,
			Message: messages[x.Index], DependsOn: x.DependsOn, PreviousVersionKept: x.PreviousKept,
		})
	}
	return out
}
