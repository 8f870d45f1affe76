package engine

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/sink"
)

// Bounds of a sink's error in status, so a snapshot of 1,000 failing sinks stays about 40 MiB.
const (
	maxErrorText       = 4 << 10  // last_error
	maxEntityErrors    = 100      // entity_errors per sink
	maxEntityBytes     = 32 << 10 // entity_errors per sink, in all
	maxEntityText      = 256      // each name, id, tag, field
	maxEntityMessage   = 1 << 10  // each field error's message
	maxEntityTags      = 16       // tags per entity error
	maxFieldErrors     = 16       // field errors per entity error
	maxErrorBodyStored = 8 << 20  // the raw answer kept for GetConfig
)

// boundError cuts a copy of se to the bounds, counting entity errors left out.
func boundError(se *sink.Error) (*sink.Error, uint32) {
	out := *se
	out.Message = CutText(se.Message, maxErrorText)
	if se.Message == "" && se.Err != nil { // Error() shows Err's text then
		out.Message = CutText(se.Err.Error(), maxErrorText)
	}
	if len(out.Body) > maxErrorBodyStored {
		out.Body = out.Body[:maxErrorBodyStored]
	}
	var kept []*confighubv1.EntityError
	size := 0
	for _, ee := range se.EntityErrors {
		b := boundEntityError(ee)
		if size += proto.Size(b); len(kept) == maxEntityErrors || size > maxEntityBytes {
			break
		}
		kept = append(kept, b)
	}
	out.EntityErrors = kept
	return &out, uint32(len(se.EntityErrors) - len(kept))
}

// boundEntityError returns a copy of ee cut to the bounds.
func boundEntityError(ee *confighubv1.EntityError) *confighubv1.EntityError {
	c := &confighubv1.EntityError{
		EntityType: CutText(ee.GetEntityType(), maxEntityText),
		EntityName: CutText(ee.GetEntityName(), maxEntityText),
		EntityId:   CutText(ee.GetEntityId(), maxEntityText),
	}
	for i, t := range ee.GetEntityTags() {
		if i == maxEntityTags {
			break
		}
		c.EntityTags = append(c.EntityTags, CutText(t, maxEntityText))
	}
	for i, fe := range ee.GetErrors() {
		if i == maxFieldErrors {
			c.Errors = append(c.Errors, &confighubv1.FieldError{Type: "entity", Message: fmt.Sprintf("... and %d more errors of this entity", len(ee.GetErrors())-i)})
			break
		}
		c.Errors = append(c.Errors, &confighubv1.FieldError{Type: CutText(fe.GetType(), maxEntityText), Field: CutText(fe.GetField(), maxEntityText), Message: CutText(fe.GetMessage(), maxEntityMessage)})
	}
	return c
}

// CutText cuts s to n bytes at a UTF-8 boundary, saying how much was cut.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes cut)", s[:cut], len(s)-cut)
}
