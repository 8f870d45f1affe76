package main

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/confighub/confighub/test/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lineWatch is a log writer that hands over the first submatch of the
// first line matching re, once the line is in the buffer.
type lineWatch struct {
	harness.SyncBuffer
	re    *regexp.Regexp
	found chan string
	// onMatch, when set, is called with the first matching line.
	onMatch func()
}

func (l *lineWatch) Write(p []byte) (int, error) {
	n, err := l.SyncBuffer.Write(p)
	if m := l.re.FindSubmatch(p); m != nil {
		select {
		case l.found <- string(m[1]):
			if l.onMatch != nil {
				l.onMatch()
			}
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

// TestStopRightAfterStart: a stop (SIGTERM) that comes as the hub starts
// serving, before gRPC's Serve began, is a normal stop: serve returns nil
// (exit 0), not "the server has been stopped". Repeated, since the stop
// can land on either side of Serve's start.
func TestStopRightAfterStart(t *testing.T) {
	for i := range 20 {
		f, err := parseFlags([]string{"--store", "memory", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		logs := &lineWatch{re: regexp.MustCompile(`msg="(confighub serving)"`), found: make(chan string, 1)}
		ctx, stop := context.WithCancel(context.Background())
		// The stop lands as the "confighub serving" line is written, just
		// before Serve starts.
		logs.onMatch = stop
		err = serve(ctx, f, slog.New(slog.NewTextHandler(logs, nil)))
		stop()
		if err != nil {
			t.Fatalf("try %d: %v, want nil:\n%s", i, err, logs.String())
		}
	}
}
