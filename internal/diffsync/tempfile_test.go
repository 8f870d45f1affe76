package diffsync

import (
	"context"
	"os"
	"testing"
)

// The configuration goes to the reader through a private temporary file:
// it is gone when Sync returns, on success, on a rejected configuration
// and on a cancelled sync.
func TestTempFileRemovedOnEveryPath(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	s := e.syncer(t, e.url, Options{TempDir: dir})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		raw  []byte
		ok   bool
	}{
		{"synced", ctxT(t), fixture(t, "httproute-example__default.yaml"), true},
		{"rejected by the reader", ctxT(t), fixture(t, "credentials__default.yaml"), false},
		{"cancelled", cancelled, fixture(t, "ingress-v1-rule-with-tls__default.yaml"), false},
	} {
		_, err := s.Sync(tc.ctx, loadConfig(t, tc.raw, 1))
		if (err == nil) != tc.ok {
			t.Fatalf("%s: error %v", tc.name, err)
		}
		left, rerr := os.ReadDir(dir)
		if rerr != nil || len(left) != 0 {
			t.Fatalf("%s: left in the temporary directory: %v %v", tc.name, left, rerr)
		}
	}
}
