package engine_test

import (
	"errors"
	"testing"

	"github.com/confighub/confighub/internal/engine"
)

// Held follows every generation and deletion: streams that hold a
// configuration and their bytes, a stream's old bytes replaced by its
// new ones. DeleteStream is refused while a sink reads the stream, and
// afterwards the stream is gone from Current, Streams, Held and the
// status view.
func TestHeldAndDeleteStream(t *testing.T) {
	h := newHarness(t)
	held := func(wantStreams int, wantBytes int64) {
		t.Helper()
		if n, b := h.e.Held(); n != wantStreams || b != wantBytes {
			t.Errorf("Held() = %d streams, %d bytes; want %d, %d", n, b, wantStreams, wantBytes)
		}
	}
	a1 := h.push("a", "one")
	b1 := h.push("b", "two")
	held(2, int64(len(a1.Raw)+len(b1.Raw)))
	a2 := h.push("a", "a longer configuration")
	held(2, int64(len(a2.Raw)+len(b1.Raw)))
	h.putOn("s", kindTest, "b", nil)
	if err := h.e.DeleteStream("b"); !errors.Is(err, engine.ErrStreamHasSinks) {
		t.Fatalf("DeleteStream of a stream a sink reads: %v", err)
	}
	held(2, int64(len(a2.Raw)+len(b1.Raw)))
	if err := h.e.DeleteStream("a"); err != nil {
		t.Fatal(err)
	}
	held(1, int64(len(b1.Raw)))
	if h.e.Current("a") != nil {
		t.Error("the deleted stream still has a configuration")
	}
	if got := h.e.Streams(); len(got) != 1 || got[0].Stream != "b" {
		t.Errorf("Streams() after the deletion: %v", got)
	}
	if _, ok := h.e.View().Snapshot("a"); ok {
		t.Error("the deleted stream still has a status")
	}
	a3 := h.push("a", "again")
	held(2, int64(len(a3.Raw)+len(b1.Raw)))
}
