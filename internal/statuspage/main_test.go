package statuspage_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain: no test leaves a goroutine behind (an event stream that
// outlives its request, a watch that is never ended).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
