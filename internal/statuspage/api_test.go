package statuspage_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/statuspage"
	"github.com/confighub/confighub/test/enginetest"
	"github.com/confighub/confighub/test/harness"
)

func fakeSinks(names ...string) []*confighubv1.Sink {
	out := make([]*confighubv1.Sink, len(names))
	for i, n := range names {
		out[i] = &confighubv1.Sink{Name: n, Kind: "fake", Spec: &confighubv1.Sink_Custom{}}
	}
	return out
}

// TestAPIAuth: with tokens, the API answers 401 without a token or with an
// unknown one, 200 with a read (or higher) token; the page itself (no
// data) loads without one.
func TestAPIAuth(t *testing.T) {
	tokens, err := auth.ParseTokens([]byte("r-token read\np-token push\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := startHub(t, fakeSinks("a"), statuspage.WithAuth(auth.New(tokens)))
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"", "", http.StatusOK},
		{"app.js", "", http.StatusOK},
		{"api/v1/streams", "", http.StatusUnauthorized},
		{"api/v1/status", "bogus", http.StatusUnauthorized},
		{"api/v1/watch", "", http.StatusUnauthorized},
		{"api/v1/streams", "r-token", http.StatusOK},
		{"api/v1/status", "p-token", http.StatusOK},
		{"api/v1/status?stream=nope", "r-token", http.StatusNotFound},
	} {
		if code, _ := harness.Get(t, http.DefaultClient, f.url+c.path, c.token); code != c.want {
			t.Errorf("GET /%s with token %q: %d, want %d", c.path, c.token, code, c.want)
		}
	}
	_, b := harness.Get(t, http.DefaultClient, f.url+"api/v1/streams", "r-token")
	var body struct{ Streams []string }
	if err := json.Unmarshal(b, &body); err != nil || len(body.Streams) != 1 || body.Streams[0] != "default" {
		t.Fatalf("streams %+v %v, want [default]", body, err)
	}
}

// readEvent reads one Server-Sent Event: its id and data.
func readEvent(t *testing.T, r *bufio.Reader) (string, *confighubv1.WatchStatusResponse) {
	t.Helper()
	var id, data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && data != "":
			ev := &confighubv1.WatchStatusResponse{}
			if err := protojson.Unmarshal([]byte(data), ev); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			return id, ev
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			data += line[6:]
		}
	}
}

// TestWatchResumes: the event stream starts with a snapshot, and a client
// that reconnects with the last id it saw gets only what came after it.
func TestWatchResumes(t *testing.T) {
	f := startHub(t, fakeSinks("a", "b"))
	gen := f.push(t, []byte("_format_version: \"3.0\"\n"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"api/v1/watch", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	id, ev := readEvent(t, bufio.NewReader(res.Body))
	_ = res.Body.Close()
	if ev.GetSnapshot() == nil || id == "" {
		t.Fatalf("first event %v (id %q), want a snapshot with an id", ev, id)
	}
	f.push(t, []byte("_format_version: \"3.0\"\n# two\nservices: []\n"), nil)

	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, f.url+"api/v1/watch", nil)
	req.Header.Set("Last-Event-ID", id)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	next, ev := readEvent(t, bufio.NewReader(res.Body))
	if ev.GetSnapshot() != nil {
		t.Fatalf("resume after %s gave a snapshot (%s), want the changes after it", id, ev.GetSnapshotReason())
	}
	if next <= id && len(next) <= len(id) {
		t.Fatalf("resumed at id %s, want after %s", next, id)
	}
	if g := ev.GetGeneration(); g != nil && g.GetGeneration() <= gen {
		t.Fatalf("resumed with generation %d, want after %d", g.GetGeneration(), gen)
	}
}

// TestNoSecretReachesThePage: a destination that quotes the sink's own
// secret in its error shows <redacted> on the page's API, as in gRPC
// status; the sink's spec is never part of it.
func TestNoSecretReachesThePage(t *testing.T) {
	const secret = "hunter2-s3cret-value"
	custom, err := structpb.NewStruct(map[string]any{"api_token": secret, "region": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	seed := []*confighubv1.Sink{{Name: "leaky", Kind: "fake", Spec: &confighubv1.Sink_Custom{Custom: custom}}}
	f := startHubWith(t, seed, map[string]enginetest.Behavior{"leaky": {Err: errors.New("login with token " + secret + " refused")}})
	f.push(t, []byte("_format_version: \"3.0\"\n"), nil)
	var body string
	harness.Eventually(t, 20*time.Second, func() bool {
		_, b := harness.Get(t, http.DefaultClient, f.url+"api/v1/status", "")
		body = string(b)
		return strings.Contains(body, "refused")
	}, "the sink's error in the status")
	if strings.Contains(body, secret) || !strings.Contains(body, "<redacted>") {
		t.Fatalf("status %s: want the secret replaced by <redacted>", body)
	}
	if strings.Contains(body, "region") {
		t.Fatalf("status %s shows the sink's spec", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"api/v1/watch", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, ev := readEvent(t, bufio.NewReader(res.Body))
	if b, _ := protojson.Marshal(ev); strings.Contains(string(b), secret) {
		t.Fatalf("watch event %s quotes the secret", b)
	}
}

// TestWatchersShareEvents: pages watching one stream get the same events,
// each change encoded once for all of them.
func TestWatchersShareEvents(t *testing.T) {
	f := startHub(t, fakeSinks("a", "b"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var readers []*bufio.Reader
	for range 3 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"api/v1/watch", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		r := bufio.NewReader(res.Body)
		if _, ev := readEvent(t, r); ev.GetSnapshot() == nil {
			t.Fatalf("first event %v, want the snapshot", ev)
		}
		readers = append(readers, r)
	}
	gen := f.push(t, []byte("_format_version: \"3.0\"\n"), nil)
	// Each page reads until the generation counts both sinks applied.
	got := make([][]string, len(readers))
	for i, r := range readers {
		for {
			id, ev := readEvent(t, r)
			got[i] = append(got[i], id+" "+protojson.Format(ev))
			if g := ev.GetGeneration(); g.GetGeneration() == gen && g.GetSinksApplied() == 2 {
				break
			}
		}
	}
	for i := 1; i < len(got); i++ {
		if strings.Join(got[i], "\n") != strings.Join(got[0], "\n") {
			t.Fatalf("page %d saw other events than page 0:\n%v\n%v", i, got[i], got[0])
		}
	}
	// Unshared, 3 pages would encode each change 3 times.
	if n := statuspage.EventEncodes(f.page); n < len(got[0]) || n >= 2*len(got[0]) {
		t.Fatalf("%d encodings for %d changes read by 3 pages, want one per change", n, len(got[0]))
	}
}

// TestAPIValidatesNames: a stream name the gRPC API refuses (rules.proto's
// stream_name) is a 400 naming the rule on every endpoint that takes one,
// as gRPC's InvalidArgument is, not a 404 for an unknown stream; a valid
// name of no stream is still a 404.
func TestAPIValidatesNames(t *testing.T) {
	f := startHub(t, fakeSinks("a"))
	long := strings.Repeat("s", 70)
	for _, c := range []struct {
		stream string
		want   int
		msg    string
	}{
		{"Bad%20Name", http.StatusBadRequest, `validation error: stream: a stream name is made of a-z, 0-9, \".\", \"_\" and \"-\", starting with a letter or digit`},
		{"..%2F..", http.StatusBadRequest, "a stream name is made of a-z"},
		{"-x", http.StatusBadRequest, "starting with a letter or digit"},
		{long, http.StatusBadRequest, "a stream name is at most 63 characters (got 70)"},
		{"nope", http.StatusNotFound, `stream \"nope\" has no configuration`},
	} {
		for _, ep := range []string{"status", "watch"} {
			code, b := harness.Get(t, http.DefaultClient, f.url+"api/v1/"+ep+"?stream="+c.stream, "")
			if code != c.want || !strings.Contains(string(b), c.msg) {
				t.Errorf("GET /api/v1/%s?stream=%s: %d %s, want %d with %q", ep, c.stream, code, b, c.want, c.msg)
			}
		}
	}
}
