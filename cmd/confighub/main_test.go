package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/confighub/confighub/internal/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lineWatch is a log writer that hands over the first submatch of the
// first line matching re, once the line is in the buffer.
type lineWatch struct {
	harness.SyncBuffer
	re    *regexp.Regexp
	found chan string
}

func (l *lineWatch) Write(p []byte) (int, error) {
	n, err := l.SyncBuffer.Write(p)
	if m := l.re.FindSubmatch(p); m != nil {
		select {
		case l.found <- string(m[1]):
		default:
		}
	}
	return n, err
}

// hubRun is a hub that run serves in this test process.
type hubRun struct {
	logs *lineWatch
	// stop ends the hub as SIGTERM does.
	stop context.CancelFunc
	// exited is closed when run returns, with its exit code in code.
	exited chan struct{}
	code   int
}

// startHub runs the hub with --store memory --listen 127.0.0.1:0 and args
// until the test ends, when it must exit 0. It returns once the hub logs
// a line matching re, with re's first submatch (an address it bound).
func startHub(t *testing.T, re *regexp.Regexp, args ...string) (*hubRun, string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	h := &hubRun{logs: &lineWatch{re: re, found: make(chan string, 1)}, stop: stop, exited: make(chan struct{})}
	go func() {
		defer close(h.exited)
		h.code = run(ctx, append([]string{"--store", "memory", "--listen", "127.0.0.1:0"}, args...), h.logs)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-h.exited:
			if h.code != 0 {
				t.Errorf("exit %d:\n%s", h.code, h.logs.String())
			}
		case <-time.After(30 * time.Second): // failsafe
			t.Errorf("the hub did not stop:\n%s", h.logs.String())
		}
	})
	select {
	case m := <-h.logs.found:
		return h, m
	case <-h.exited:
		t.Fatalf("hub exited %d:\n%s", h.code, h.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the hub did not start:\n%s", h.logs.String())
	}
	return nil, ""
}
