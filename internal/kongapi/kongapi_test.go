package kongapi

import (
	"testing"

	"github.com/confighub/confighub/sink"
)

func TestStatusCodes(t *testing.T) {
	for _, c := range []struct {
		status    int
		code      sink.Code
		permanent bool
	}{
		{400, sink.CodeRejected, true},
		{401, sink.CodeUnauthorized, false},
		{403, sink.CodeUnauthorized, false},
		{404, sink.CodeRejected, true},
		{408, sink.CodeTimeout, false},
		{409, sink.CodeRejected, true},
		{413, sink.CodeTooLarge, true},
		{429, sink.CodeRateLimited, false},
		{500, sink.CodeUnavailable, false},
		{502, sink.CodeUnavailable, false},
		{503, sink.CodeUnavailable, false},
		{504, sink.CodeTimeout, false},
	} {
		code, perm := Classify(c.status)
		if code != c.code || perm != c.permanent {
			t.Errorf("HTTP %d: %s permanent=%v, want %s permanent=%v", c.status, code, perm, c.code, c.permanent)
		}
		if !code.Known() {
			t.Errorf("HTTP %d: %q is not in the closed set", c.status, code)
		}
	}
}
