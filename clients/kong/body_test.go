package kong

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/sink"
)

// allocated is the number of bytes f allocates (process-wide).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Kong answers a 201 with every loaded entity, about the size of the
// configuration: a fleet of gateway sinks must not hold one copy of that
// answer per gateway. Error answers are read up to a bound.
func TestAnswerBodiesAreNotBuffered(t *testing.T) {
	const size = 64 << 20
	big := bytes.Repeat([]byte(" "), size)
	code := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"message":"x"`))
		_, _ = w.Write(big)
		_, _ = w.Write([]byte(`}`))
	}))
	defer srv.Close()
	s := newSink(t, &confighubv1.KongSpec{Address: srv.URL}, sink.Deps{})
	cfg := cfgOf(t, []byte(`{"_format_version":"3.0"}`))
	if _, err := cfg.JSON(); err != nil {
		t.Fatal(err)
	}
	var err error
	if n := allocated(func() { err = s.Apply(context.Background(), cfg) }); err != nil || n > 4<<20 {
		t.Fatalf("a 201 with a %d-byte body: err %v, %d bytes allocated", size, err, n)
	}
	code = http.StatusInternalServerError
	n := allocated(func() { err = s.Apply(context.Background(), cfg) })
	se := sinkErr(t, err)
	if se.Code != "unavailable" || n > 5*maxAnswerBytes || len(se.Body) > maxAnswerBytes {
		t.Fatalf("a 500 with a %d-byte body: %d bytes allocated, body %d bytes, code %s", size, n, len(se.Body), se.Code)
	}
	if !strings.Contains(se.Message, "HTTP 500") {
		t.Fatalf("message %q", se.Message)
	}
}
