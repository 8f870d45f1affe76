package etcdstatus_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/engine/status"
	"github.com/confighub/confighub/internal/engine/status/etcdstatus"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/enginetest"
	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/statustest"
)

// failures is an engine's LastFailed that a test sets.
type failures struct {
	mu  sync.Mutex
	cfg *config.Config
	err *sink.Error
}

func (f *failures) set(cfg *config.Config, err *sink.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg, f.err = cfg, err
}

func (f *failures) LastFailed(string) (*config.Config, *sink.Error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg, f.err, f.cfg != nil
}

// TestFailedRecords: a writer copies its sink's last failed apply to etcd
// (body cut at MaxFailedBody) after the status, replaces it with a newer
// failure, keeps it when a new owner has none in memory and the sink
// applied nothing newer, and deletes it once the sink applied its
// generation or was removed; Mirror.LastFailed reads it back.
func TestFailedRecords(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := etcdstatus.NewMirror(cli, "/t")
	defer m.Close()

	writer := func(f *failures) (*status.Broker, *etcdstatus.Writer) {
		src := status.New()
		t.Cleanup(src.Close)
		w := etcdstatus.NewWriter(cli, "/t", src, all{}, nil, etcdstatus.WithInterval(time.Hour), etcdstatus.WithFailures(f))
		w.Follow("s")
		run(t, w.Run)
		return src, w
	}
	flush := func(src *status.Broker, w *etcdstatus.Writer, applied uint64, lastError string) {
		t.Helper()
		st := statustest.SinkStatus("a", applied)
		st.LastError = lastError
		if err := w.WaitSeen(ctx, "s", src.PutSink(st)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *etcdstatus.Failed {
		t.Helper()
		f, err := m.LastFailed(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	f := &failures{}
	src, w := writer(f)
	big := bytes.Repeat([]byte("x"), etcdstatus.MaxFailedBody+10)
	g1 := enginetest.Config("s", 1, "one", time.Now())
	f.set(g1, &sink.Error{Code: sink.CodeRejected, Message: "route r1 is invalid", Permanent: true, Body: big})
	flush(src, w, 0, "rejected: route r1 is invalid")
	got := read()
	if got == nil || got.Generation != 1 || got.Hash != g1.Hash || got.Stream != "s" ||
		got.Err.Error() != "rejected: route r1 is invalid" || !got.Err.Permanent ||
		!bytes.Equal(got.Err.Body, big[:etcdstatus.MaxFailedBody]) || got.BodyOmitted != 10 {
		t.Fatalf("record of generation 1: %+v", got)
	}

	g2 := enginetest.Config("s", 2, "two", time.Now())
	f.set(g2, &sink.Error{Code: sink.CodeUnavailable, Message: "503", Body: []byte("busy")})
	flush(src, w, 0, "unavailable: 503")
	if got := read(); got == nil || got.Generation != 2 || string(got.Err.Body) != "busy" || got.Err.Permanent {
		t.Fatalf("record of generation 2: %+v", got)
	}
	if k := keyCount(t, cli, "/t/failed/a/"); k != 1 {
		t.Fatalf("%d records of sink a, want the newest only", k)
	}

	// A new owner without the failure in memory keeps the record while the
	// sink has applied nothing newer, and drops it once it has.
	src2, w2 := writer(&failures{})
	flush(src2, w2, 1, "")
	if got := read(); got == nil || got.Generation != 2 {
		t.Fatalf("record after a takeover (applied 1): %+v, want generation 2's", got)
	}
	flush(src2, w2, 2, "")
	if got := read(); got != nil {
		t.Fatalf("record after generation 2 applied: %+v, want none", got)
	}

	// Removing a sink removes its record.
	f.set(enginetest.Config("s", 3, "three", time.Now()), &sink.Error{Code: sink.CodeRejected, Message: "bad", Permanent: true})
	flush(src, w, 2, "rejected: bad")
	if read() == nil {
		t.Fatal("no record written again")
	}
	if err := w.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != nil {
		t.Fatalf("record after removal: %+v", got)
	}
}

func keyCount(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}
