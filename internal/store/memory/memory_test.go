package memory_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/test/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, r store.Retention) store.Store {
		s := memory.New(memory.WithRetention(r))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
