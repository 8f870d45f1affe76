package hub

import (
	"testing"

	"go.uber.org/goleak"
)

// An upload runs two workers per call: none may outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
