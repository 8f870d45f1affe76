package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/bolt"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
)

// fakeEngine records what the hub hands to the engine.
type fakeEngine struct {
	mu        sync.Mutex
	published []*config.Config
	sinks     map[string]*confighubv1.Sink
	restored  []store.Applied
	putErr    error
}

var (
	_ Publisher = (*fakeEngine)(nil)
	_ SinkAdmin = (*fakeEngine)(nil)
)

// ports: these tests publish and admin sinks; no status or diagnostics.
func (f *fakeEngine) ports() Ports { return Ports{Publisher: f, Sinks: f} }

func newFake() *fakeEngine { return &fakeEngine{sinks: map[string]*confighubv1.Sink{}} }

func (f *fakeEngine) Restore(a []store.Applied)          { f.restored = a }
func (f *fakeEngine) RestoreConverged([]store.Converged) {}
func (f *fakeEngine) Publish(c *config.Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = append(f.published, c)
}
func (f *fakeEngine) Current(stream string) *config.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.published) - 1; i >= 0; i-- {
		if f.published[i].Stream == stream {
			return f.published[i]
		}
	}
	return nil
}
func (f *fakeEngine) Streams() []*config.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := map[string]*config.Config{}
	for _, c := range f.published {
		cur[c.Stream] = c
	}
	out := make([]*config.Config, 0, len(cur))
	for _, c := range cur {
		out = append(out, c)
	}
	return out
}
func (f *fakeEngine) Held() (int, int64) {
	var n int64
	cs := f.Streams()
	for _, c := range cs {
		n += int64(len(c.Raw))
	}
	return len(cs), n
}
func (f *fakeEngine) DeleteStream(stream string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = slices.DeleteFunc(f.published, func(c *config.Config) bool { return c.Stream == stream })
	return nil
}
func (f *fakeEngine) ValidateSink(s *confighubv1.Sink) (*confighubv1.Sink, error) {
	if s.GetKind() == "bad" {
		return nil, sink.ErrUnknownKind
	}
	return s, nil
}
func (f *fakeEngine) PutSink(s *confighubv1.Sink) (*confighubv1.Sink, bool, error) {
	if f.putErr != nil {
		return nil, false, f.putErr
	}
	if s.GetKind() == "bad" { // a stored sink whose kind is gone
		return nil, false, sink.ErrUnknownKind
	}
	_, had := f.sinks[s.GetName()]
	f.sinks[s.GetName()] = s
	return s, !had, nil
}
func (f *fakeEngine) DeleteSink(n string) error {
	if _, ok := f.sinks[n]; !ok {
		return errors.New("no such sink")
	}
	delete(f.sinks, n)
	return nil
}
func (f *fakeEngine) ListSinks(stream string) []*confighubv1.Sink {
	var out []*confighubv1.Sink
	for _, s := range f.sinks {
		if stream == "" || s.GetStream() == stream {
			out = append(out, s)
		}
	}
	return out
}
func (f *fakeEngine) SinkCount(stream string) int { return len(f.ListSinks(stream)) }
func (f *fakeEngine) SinkTotal() int              { return len(f.ListSinks("")) }
func (f *fakeEngine) Sink(n string) *confighubv1.Sink {
	if s, ok := f.sinks[n]; ok {
		return proto.Clone(s).(*confighubv1.Sink)
	}
	return nil
}
func (f *fakeEngine) SpecBytes(except string) int {
	n := 0
	for name, s := range f.sinks {
		if name != except {
			n += proto.Size(s)
		}
	}
	return n
}
func (f *fakeEngine) HasSink(n string) bool {
	_, ok := f.sinks[n]
	return ok
}

const good = `{"_format_version":"3.0","services":[]}`

// eachStore runs f on the memory store and the bolt store (staged while
// checked); check, when not nil, runs after f with the bolt store's record
// files as the next start finds them, and how many of its retained
// generations have one.
func eachStore(t *testing.T, f func(t *testing.T, st store.Store), check func(t *testing.T, blobs []os.DirEntry, want int)) {
	t.Run("memory", func(t *testing.T) { f(t, memory.New()) })
	t.Run("bolt", func(t *testing.T) { onBolt(t, func(t *testing.T, st *bolt.Store) { f(t, st) }, check) })
}

// onBolt is eachStore's bolt half.
func onBolt(t *testing.T, f func(t *testing.T, st *bolt.Store), check func(t *testing.T, blobs []os.DirEntry, want int)) {
	path := filepath.Join(t.TempDir(), "confighub.db")
	st, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	f(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if check != nil {
		ents, err := os.ReadDir(path + ".blobs")
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		streams, err := st.ListStreams(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range streams {
			gens, err := st.ListGenerations(context.Background(), c.Stream, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range gens {
				if g.Size >= int64(st.DeferBelow()) {
					want++
				}
			}
		}
		check(t, ents, want)
	}
}

// oneBlob: every rejected or unchanged push left no file behind: the
// record files are those of the retained generations.
func oneBlob(t *testing.T, blobs []os.DirEntry, want int) {
	if len(blobs) != want {
		t.Fatalf("%d record files in the bolt store, want %d (the retained generations')", len(blobs), want)
	}
}

func TestPushStoresThenPublishes(t *testing.T) { eachStore(t, testPushStoresThenPublishes, oneBlob) }

func testPushStoresThenPublishes(t *testing.T, st store.Store) {
	ctx := context.Background()
	fan := newFake()
	h := New(st, fan.ports())
	res, err := h.Push(ctx, PushInput{Config: []byte(good), Labels: map[string]string{"by": "kic"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Generation != 1 || res.Hash != config.Hash([]byte(good)) || res.Unchanged {
		t.Fatalf("result %+v", res)
	}
	s, err := st.GetStream(ctx, config.DefaultStream)
	if err != nil || s.Generation != 1 || string(s.Raw) != good || s.Labels["by"] != "kic" {
		t.Fatalf("stored %+v %v", s, err)
	}
	if len(fan.published) != 1 || fan.published[0].Generation != 1 {
		t.Fatalf("published %v", fan.published)
	}
	// Same bytes again: unchanged, no new generation, no sink touched.
	res, err = h.Push(ctx, PushInput{Config: []byte(good)})
	if err != nil || !res.Unchanged || res.Generation != 1 || len(fan.published) != 1 {
		t.Fatalf("same config: %+v %v published=%d", res, err, len(fan.published))
	}
}

func TestPushHoldsTheBytesOnce(t *testing.T) { eachStore(t, testPushHoldsTheBytesOnce, nil) }

// testPushHoldsTheBytesOnce: the generation handed to the engine is the
// pushed bytes, not a copy, so a 10 MiB config takes 10 MiB however many
// sinks, stores and readers share it.
func testPushHoldsTheBytesOnce(t *testing.T, st store.Store) {
	raw := fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":"s","url":"http://example.com","tags":["%s"]}]}`, bytes.Repeat([]byte("t"), 10<<20))
	fan := newFake()
	h := New(st, fan.ports())
	if _, err := h.Push(context.Background(), PushInput{Config: raw}); err != nil {
		t.Fatal(err)
	}
	if len(fan.published) != 1 || &fan.published[0].Raw[0] != &raw[0] {
		t.Fatalf("the engine got a copy of the pushed %d bytes (published %d generations)", len(raw), len(fan.published))
	}
	if m, ok := st.(*memory.Store); ok {
		if c, err := m.GetStream(context.Background(), config.DefaultStream); err != nil || &c.Raw[0] != &raw[0] {
			t.Fatalf("the memory store holds a copy of the pushed bytes (%v)", err)
		}
	}
}

func TestRejectedPushChangesNothing(t *testing.T) {
	// Below the store's DeferBelow (the bolt store's) the push checks,
	// then stages; from it on the check and the stage run side by side.
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprint("padded to DeferBelow ", big), func(t *testing.T) {
			eachStore(t, func(t *testing.T, st store.Store) {
				pad := 0
				if big {
					// memory never writes at a stage: its DeferBelow is
					// MaxInt.
					pad = min(New(st, Ports{}).deferBelow, 1<<20)
				}
				testRejectedPushChangesNothing(t, st, pad)
			}, oneBlob)
		})
	}
}

// testRejectedPushChangesNothing pushes configs padded with pad bytes of
// trailing white space.
func testRejectedPushChangesNothing(t *testing.T, st store.Store, pad int) {
	ctx := context.Background()
	fan := newFake()
	h := New(st, fan.ports(), WithMaxConfigBytes(int64(64+pad)))
	padded := func(s string) []byte { return append([]byte(s), bytes.Repeat([]byte(" "), pad)...) }
	if _, err := h.Push(ctx, PushInput{Config: padded(good)}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in   PushInput
		want error
		msg  string
	}{
		{PushInput{Config: padded(`{"services":[]}`)}, ErrInvalid, "_format_version"},
		{PushInput{Config: padded(`{`)}, ErrInvalid, "not valid JSON"},
		{PushInput{Config: padded(strings.Repeat(" ", 65))}, ErrTooLarge, fmt.Sprint("limit of ", 64+pad)},
		// Ahead of the stream, not stale: the message gives both
		// generations and the stream once.
		{PushInput{Config: padded(`{"_format_version":"3.0","x":1}`), ExpectedGeneration: 7}, ErrStale, `expected_generation does not match: stream "default" is at generation 1, expected 7`},
	}
	for _, c := range cases {
		_, err := h.Push(ctx, c.in)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("push %.40q: %v, want %v naming %q", c.in.Config, err, c.want, c.msg)
		}
		// The check's own sentinel stays in the chain under the hub's.
		if c.want == ErrInvalid && !errors.Is(err, config.ErrInvalid) {
			t.Errorf("push %.40q: %v does not wrap config.ErrInvalid", c.in.Config, err)
		}
	}
	s, _ := st.GetStream(ctx, config.DefaultStream)
	if s.Generation != 1 || !bytes.Equal(s.Raw, padded(good)) || len(fan.published) != 1 {
		t.Fatalf("a rejected push changed something: stored gen %d, published %d", s.Generation, len(fan.published))
	}
	// The right expected generation is accepted.
	res, err := h.Push(ctx, PushInput{Config: padded(`{"_format_version":"3.0","x":1}`), ExpectedGeneration: 1})
	if err != nil || res.Generation != 2 {
		t.Fatalf("expected_generation 1: %+v %v", res, err)
	}
}

func TestStartResumesStoredStreamsAndSeedsSinks(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if _, err := New(st, newFake().ports()).Push(ctx, PushInput{Stream: "a", Config: []byte(good)}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSink(ctx, &confighubv1.Sink{Name: "runtime", Kind: "file"}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordApplied(ctx, store.Applied{Sink: "runtime", Stream: "a", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	fan := newFake()
	if err := New(st, fan.ports()).Start(ctx, []*confighubv1.Sink{{Name: "seed", Kind: "file"}}); err != nil {
		t.Fatal(err)
	}
	if len(fan.published) != 1 || fan.published[0].Stream != "a" || fan.published[0].Generation != 1 {
		t.Fatalf("stored stream not resumed: %v", fan.published)
	}
	if fan.sinks["runtime"] == nil || fan.sinks["seed"] == nil || len(fan.restored) != 1 {
		t.Fatalf("sinks %v restored %v", fan.sinks, fan.restored)
	}
	// A bad seed fails the start and stores nothing.
	fan2 := newFake()
	err := New(st, fan2.ports()).Start(ctx, []*confighubv1.Sink{{Name: "x", Kind: "bad"}})
	if err == nil || len(fan2.sinks) != 0 {
		t.Fatalf("bad seed: %v sinks=%v", err, fan2.sinks)
	}
}

// A spec that passes validation but that the kind's factory refuses is
// InvalidArgument and leaves the store as it was (point 10); a start that
// fails for another reason (the engine stopping) is Unavailable.
func TestPutSinkRefusedByFactoryChangesNothing(t *testing.T) {
	ctx := context.Background()
	st, fan := memory.New(), newFake()
	h := New(st, fan.ports())
	old := &confighubv1.Sink{Name: "gw", Kind: "test", Stream: "default"}
	if _, _, err := h.PutSink(ctx, old); err != nil {
		t.Fatal(err)
	}
	fan.putErr = fmt.Errorf("%w: address is unreachable", sink.ErrInvalidSpec)
	_, _, err := h.PutSink(ctx, &confighubv1.Sink{Name: "gw", Kind: "test", Stream: "other"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("replace refused by the factory: %v, want ErrInvalid naming the problem", err)
	}
	_, _, err = h.PutSink(ctx, &confighubv1.Sink{Name: "new", Kind: "test"})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("create refused by the factory: %v", err)
	}
	stored, _ := st.ListSinks(ctx)
	if len(stored) != 1 || stored[0].GetName() != "gw" || stored[0].GetStream() != "default" {
		t.Fatalf("stored sinks after refused puts: %v, want only the previous gw", stored)
	}
	fan.putErr = errors.New("engine stopped")
	if _, _, err := h.PutSink(ctx, &confighubv1.Sink{Name: "late", Kind: "test"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("put while stopping: %v, want ErrUnavailable", err)
	}
}

// eioStore is a store whose commit's flush fails once (EIO); from then
// on it refuses every write, as the bolt store does (a later flush proves
// nothing after a failed one).
type eioStore struct {
	store.Store
	mu     sync.Mutex
	failed error
}

type eioStaged struct {
	store.Staged
	s *eioStore
}

func (e *eioStore) StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (store.Staged, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed != nil {
		return nil, e.failed
	}
	g, err := e.Store.StageConfig(ctx, stream, raw, tee)
	if err != nil {
		return nil, err
	}
	return eioStaged{g, e}, nil
}

func (g eioStaged) Commit(context.Context, *config.Config, uint64) (*config.Config, bool, error) {
	_ = g.Discard()
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	g.s.failed = fmt.Errorf("a commit could not be made durable, restart to recover: fdatasync: %w", syscall.EIO)
	return nil, false, g.s.failed
}

// A push whose durable write fails is Unavailable (not acked), publishes
// nothing, and the previous generation is still served; later pushes are
// Unavailable too while the store refuses writes.
func TestFailedFlushIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "confighub.db")
	bs, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bs.Close() }()
	fan := newFake()
	first, err := New(bs, fan.ports()).Push(ctx, PushInput{Config: []byte(good)})
	if err != nil {
		t.Fatal(err)
	}
	h := New(&eioStore{Store: bs}, fan.ports())
	for i := range 2 {
		_, err := h.Push(ctx, PushInput{Config: fmt.Appendf(nil, `{"_format_version":"3.0","x":%d}`, i)})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "input/output error") {
			t.Fatalf("push %d with a failed flush: %v, want Unavailable naming the I/O error", i, err)
		}
	}
	if len(fan.published) != 1 {
		t.Fatalf("published %d configs, want only the first", len(fan.published))
	}
	c, err := h.Config(ctx, "")
	if err != nil || c.Generation != first.Generation || c.Hash != first.Hash {
		t.Fatalf("config after failed pushes: %v, %v; want generation %d", c, err, first.Generation)
	}
}

// cancelingStager is the bolt store with the push's context ended while
// its stage runs (the client went away): at its first bytes handed to
// tee, or as the stage begins when there is no tee; with after, once the
// stage is done, before the commit.
type cancelingStager struct {
	*bolt.Store
	cancel context.CancelFunc
	after  bool
}

func (c cancelingStager) StageConfig(ctx context.Context, stream string, raw []byte, tee io.Writer) (store.Staged, error) {
	switch {
	case c.after:
		defer c.cancel()
	case tee == nil:
		c.cancel()
	default:
		tee = cancelingWriter{tee, c.cancel}
	}
	return c.Store.StageConfig(ctx, stream, raw, tee)
}

type cancelingWriter struct {
	io.Writer
	cancel context.CancelFunc
}

func (w cancelingWriter) Write(p []byte) (int, error) {
	w.cancel()
	return w.Writer.Write(p)
}

// A push whose context ends while its valid bytes are staged, or after
// the stage and before the commit, is Unavailable, abandoned, and commits
// nothing: the stream stays at its generation, the engine gets nothing,
// and no staged file is left. Below DeferBelow the stage begins after the
// check; from it on, the stage is cut between two of the bolt store's
// writes (1 MiB each) while the check runs beside it.
func TestAbandonedPushCommitsNothing(t *testing.T) {
	for _, c := range []struct{ big, after bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		big := c.big
		t.Run(fmt.Sprintf("padded to DeferBelow %v, after the stage %v", big, c.after), func(t *testing.T) {
			onBolt(t, func(t *testing.T, bs *bolt.Store) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				fan := newFake()
				if _, err := New(bs, fan.ports()).Push(ctx, PushInput{Config: []byte(good)}); err != nil {
					t.Fatal(err)
				}
				h := New(cancelingStager{bs, cancel, c.after}, fan.ports())
				raw := []byte(`{"_format_version":"3.0","x":1}`)
				if big {
					raw = append(raw, bytes.Repeat([]byte(" "), max(h.deferBelow, 3<<20))...)
				} else if len(raw) >= h.deferBelow {
					t.Fatalf("a %d-byte config is not below DeferBelow %d", len(raw), h.deferBelow)
				}
				_, err := h.Push(ctx, PushInput{Config: raw})
				if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "push abandoned") {
					t.Fatalf("push whose context ended: %v, want Unavailable, push abandoned", err)
				}
				s, err := bs.GetStream(context.Background(), config.DefaultStream)
				if err != nil || s.Generation != 1 || len(fan.published) != 1 {
					t.Fatalf("an abandoned push changed something: stored %v (%v), published %d", s, err, len(fan.published))
				}
			}, oneBlob)
		})
	}
}

// TestStartCountsEachSinkOnce: "hub started sinks=N" counts the sinks that
// run, each once: a seeded sink stored at the last start is not counted
// again, and a stored sink that could not start is not counted.
func TestStartCountsEachSinkOnce(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, s := range []*confighubv1.Sink{{Name: "seed", Kind: "file"}, {Name: "runtime", Kind: "file"}, {Name: "gone", Kind: "bad"}} {
		if err := st.PutSink(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	rec := harness.NewLogRecorder(t, slog.LevelInfo)
	if err := New(st, newFake().ports(), WithLogger(rec.Logger())).Start(ctx, []*confighubv1.Sink{{Name: "seed", Kind: "file"}}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Join(rec.Lines(), "\n"); !strings.Contains(lines, "INFO hub started streams=0 sinks=2 seeded=1") {
		t.Fatalf("want sinks=2 (seed and runtime, each once):\n%s", lines)
	}
}

// TestSinkSecretsAreWriteOnly: PutSink's answer and ListSinks show a
// secret as its placeholder; sending the spec back as read keeps the
// stored secret; a placeholder that matches nothing stored is ErrInvalid
// and changes nothing; the sinks file may not hold placeholders.
func TestSinkSecretsAreWriteOnly(t *testing.T) {
	ctx := context.Background()
	st, fan := memory.New(), newFake()
	h := New(st, fan.ports(), WithSinkSecrets(redact.NewSinkSecrets([]byte("k"))))
	spec := &confighubv1.Sink{Name: "kn", Kind: "konnect", Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{ControlPlaneId: "cp", Token: "kpat_hunter2"}}}
	out, _, err := h.PutSink(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	listed := h.ListSinks("")
	if len(listed) != 1 || !redact.IsPlaceholder(listed[0].GetKonnect().GetToken()) || !redact.IsPlaceholder(out.GetKonnect().GetToken()) {
		t.Fatalf("PutSink answered %v, ListSinks %v: want the token as a placeholder", out, listed)
	}
	if fan.sinks["kn"].GetKonnect().GetToken() != "kpat_hunter2" {
		t.Fatalf("the engine got %v", fan.sinks["kn"])
	}
	// Read, change something else, put back: the token stays.
	back := listed[0]
	back.GetKonnect().ControlPlaneId = "cp2"
	if _, _, err := h.PutSink(ctx, back); err != nil {
		t.Fatal(err)
	}
	stored, _ := st.ListSinks(ctx)
	if len(stored) != 1 || stored[0].GetKonnect().GetToken() != "kpat_hunter2" || stored[0].GetKonnect().GetControlPlaneId() != "cp2" {
		t.Fatalf("stored after a read-modify-write: %v", stored)
	}
	// A placeholder of another value, or for a sink with nothing stored.
	wrong := proto.Clone(back).(*confighubv1.Sink)
	wrong.GetKonnect().Token = redact.NewSinkSecrets([]byte("k")).Redact(&confighubv1.Sink{Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{Token: "other"}}}).GetKonnect().GetToken()
	if _, _, err := h.PutSink(ctx, wrong); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "konnect.token") {
		t.Fatalf("a placeholder of another value: %v", err)
	}
	fresh := proto.Clone(back).(*confighubv1.Sink)
	fresh.Name = "kn2"
	if _, _, err := h.PutSink(ctx, fresh); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a placeholder for a new sink: %v", err)
	}
	if stored, _ := st.ListSinks(ctx); len(stored) != 1 || stored[0].GetKonnect().GetToken() != "kpat_hunter2" {
		t.Fatalf("refused puts changed the store: %v", stored)
	}
	// The sinks file holds values, never placeholders.
	err = New(memory.New(), newFake().ports()).Start(ctx, []*confighubv1.Sink{back})
	if err == nil || !strings.Contains(err.Error(), "konnect.token holds a redacted placeholder") {
		t.Fatalf("a placeholder in the sinks file: %v", err)
	}
}

// Sink specs stay small enough for ListSinks to answer them all: one spec
// over 256 KiB is InvalidArgument, a put that would bring all specs over
// the total is ResourceExhausted; both change nothing, and replacing a
// sink counts its new spec instead of the old one.
func TestSinkSpecBytesBounded(t *testing.T) {
	ctx := context.Background()
	st, fan := memory.New(), newFake()
	h := New(st, fan.ports())
	h.maxSpecs = 1 << 20
	withHeader := func(name string, n int) *confighubv1.Sink {
		return &confighubv1.Sink{Name: name, Kind: "test", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{
			Address: "http://gw:8001", Headers: map[string]string{"X-Big": strings.Repeat("h", n)}}}}
	}
	if _, _, err := h.PutSink(ctx, withHeader("huge", 300<<10)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `sink "huge": the spec is 307`) {
		t.Fatalf("a 300 KiB spec: %v", err)
	}
	for i := range 4 {
		if _, _, err := h.PutSink(ctx, withHeader(fmt.Sprintf("s%d", i), 250<<10)); err != nil {
			t.Fatalf("spec %d: %v", i, err)
		}
	}
	_, _, err := h.PutSink(ctx, withHeader("s4", 250<<10))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "at most 1048576 (ListSinks answers every spec at once)") {
		t.Fatalf("a fifth 250 KiB spec: %v", err)
	}
	if _, _, err := h.PutSink(ctx, withHeader("s0", 250<<10)); err != nil {
		t.Fatalf("replacing a spec counts it once: %v", err)
	}
	if stored, _ := st.ListSinks(ctx); len(stored) != 4 {
		t.Fatalf("%d sinks stored, want 4", len(stored))
	}
}

// specEngine is fakeEngine whose Sink (a copy of the spec, on the
// engine) fails the test: SinkConfig only asks whether the sink exists.
type specEngine struct {
	*fakeEngine
	t *testing.T
}

func (f specEngine) Sink(string) *confighubv1.Sink {
	f.t.Error("SinkConfig copied a sink's spec to learn that it exists")
	return nil
}

// noDiag: every sink applied and failed nothing yet.
type noDiag struct{}

func (noDiag) LastApplied(string) (*config.Config, bool)             { return nil, false }
func (noDiag) LastFailed(string) (*config.Config, *sink.Error, bool) { return nil, nil, false }

// GetConfig of a sink tells an unknown sink (NotFound naming it) from one
// that applied or failed nothing yet, without copying a spec.
func TestSinkConfigOfUnknownSink(t *testing.T) {
	fan := newFake()
	fan.sinks["s"] = &confighubv1.Sink{Name: "s", Kind: "test"}
	h := New(memory.New(), Ports{Publisher: fan, Sinks: specEngine{fan, t}, Diagnostics: noDiag{}})
	for _, c := range []struct {
		name   string
		failed bool
		msg    string
	}{
		{"x", false, `not found: sink "x"`},
		{"x", true, `not found: sink "x"`},
		{"s", false, `sink "s" has applied nothing yet`},
		{"s", true, `sink "s" has no failed apply`},
	} {
		if _, _, err := h.SinkConfig(c.name, c.failed); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("SinkConfig(%q, failed %v): %v, want NotFound %q", c.name, c.failed, err, c.msg)
		}
	}
}
