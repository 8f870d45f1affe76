package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/confighub/confighub/internal/store/memory"
)

func pushed(t *testing.T, h *Hub, stream string) error {
	t.Helper()
	raw := fmt.Sprintf(`{"_format_version":"3.0","_comment":%q}`, stream)
	_, err := h.Push(context.Background(), PushInput{Stream: stream, Config: []byte(raw)})
	return err
}

// A bound counts what exists: a hub that starts on a store holding more
// streams than --max-streams serves them all, takes pushes to them, and
// refuses only a new stream.
func TestStartWithMoreStreamsThanTheBound(t *testing.T) {
	st := memory.New()
	defer st.Close()
	before := New(st, newFake().ports(), WithLimits(Limits{}))
	for i := range 3 {
		if err := pushed(t, before, fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	fan := newFake()
	h := New(st, fan.ports(), WithLimits(Limits{MaxStreams: 2}))
	if err := h.Start(context.Background(), nil); err != nil {
		t.Fatalf("start with 3 streams under --max-streams 2: %v", err)
	}
	for i := range 3 {
		s := fmt.Sprintf("s%d", i)
		if _, err := h.Config(context.Background(), s); err != nil {
			t.Errorf("stream %s after the restart: %v", s, err)
		}
		if _, err := h.Push(context.Background(), PushInput{Stream: s, Config: []byte(`{"_format_version":"3.0","_comment":"new"}`)}); err != nil {
			t.Errorf("push to %s: %v", s, err)
		}
	}
	if err := pushed(t, h, "s0-again"); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "holds 3 of at most 2 (--max-streams)") {
		t.Errorf("a new stream past the bound: %v", err)
	}
}

// Concurrent pushes to new streams cannot pass --max-streams together:
// of 20 pushes to 20 new streams under a bound of 5, exactly 5 are
// stored.
func TestConcurrentNewStreamsStayWithinTheBound(t *testing.T) {
	st := memory.New()
	defer st.Close()
	fan := newFake()
	h := New(st, fan.ports(), WithLimits(Limits{MaxStreams: 5}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			err := pushed(t, h, fmt.Sprintf("n%d", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrLimit):
				refused++
			default:
				t.Errorf("push: %v", err)
			}
		})
	}
	wg.Wait()
	streams, err := st.ListStreams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ok != 5 || refused != 15 || len(streams) != 5 {
		t.Errorf("%d stored, %d refused, %d streams in the store; want 5, 15, 5", ok, refused, len(streams))
	}
}
