package status_test

import (
	"sync"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/engine/status"
)

// TestEncodingsEncodeOnce: concurrent watchers sending one change get one
// encoding, made once; a change evicted by newer ones is encoded again
// when asked for.
func TestEncodingsEncodeOnce(t *testing.T) {
	c := status.NewEncodings[string](2)
	evs := []*confighubv1.WatchStatusResponse{{Revision: 1}, {Revision: 2}, {Revision: 3}}
	var calls sync.Map
	encode := func(ev *confighubv1.WatchStatusResponse) func() (string, error) {
		return func() (string, error) {
			n, _ := calls.LoadOrStore(ev.GetRevision(), new(int))
			*n.(*int)++
			return ev.String(), nil
		}
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for _, ev := range evs[:2] {
				if got, err := c.Get(ev, encode(ev)); err != nil || got != ev.String() {
					t.Errorf("Get(%d) = %q, %v", ev.GetRevision(), got, err)
				}
			}
		})
	}
	wg.Wait()
	if n := c.Encodes(); n != 2 {
		t.Fatalf("2 changes sent by 10 watchers: %d encodings, want 2", n)
	}
	// Keeping 2: the third evicts the first.
	if _, err := c.Get(evs[2], encode(evs[2])); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(evs[1], encode(evs[1])); err != nil {
		t.Fatal(err)
	}
	if n := c.Encodes(); n != 3 {
		t.Fatalf("after a third change: %d encodings, want 3 (the second still kept)", n)
	}
	if _, err := c.Get(evs[0], encode(evs[0])); err != nil {
		t.Fatal(err)
	}
	if n := c.Encodes(); n != 4 {
		t.Fatalf("the evicted first change: %d encodings, want 4 (encoded again)", n)
	}
}
