package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// Option configures Run.
type Option func(*options)

type options struct {
	reopen   Reopen
	largeLen int
}

// NewStore returns a fresh, empty store keeping r's generations.
type NewStore func(t *testing.T, r store.Retention) store.Store

// Reopen closes s and returns a new store over the same durable data,
// keeping r's generations.
type Reopen func(t *testing.T, s store.Store, r store.Retention) store.Store

// WithReopen enables the persistence checks.
func WithReopen(reopen Reopen) Option {
	return func(o *options) { o.reopen = reopen }
}

// WithLargeConfig sets the size of the config used by the large-config
// round trip (default 3 MiB, beyond etcd's default request limit).
func WithLargeConfig(n int) Option {
	return func(o *options) { o.largeLen = n }
}

// Run runs the conformance suite. newStore returns a fresh, empty store for
// each subtest; it registers its own cleanup (Close must be idempotent, as
// the reopen check closes stores too).
func Run(t *testing.T, newRetained NewStore, opts ...Option) {
	o := options{largeLen: 3 << 20}
	for _, opt := range opts {
		opt(&o)
	}
	newStore := func(t *testing.T) store.Store { return newRetained(t, store.DefaultRetention()) }
	reopen := func(t *testing.T, s store.Store) store.Store { return o.reopen(t, s, store.DefaultRetention()) }
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, newStore(t)) })
	t.Run("GenerationsPerStream", func(t *testing.T) { testGenerations(t, newStore(t)) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("ExpectedGenerationConflict", func(t *testing.T) { testConflict(t, newStore(t)) })
	t.Run("UnchangedOnSameHash", func(t *testing.T) { testUnchanged(t, newStore(t)) })
	t.Run("LargeConfig", func(t *testing.T) { testLarge(t, newStore(t), o.largeLen) })
	t.Run("Sinks", func(t *testing.T) { testSinks(t, newStore(t)) })
	t.Run("Applied", func(t *testing.T) { testApplied(t, newStore(t)) })
	t.Run("ConcurrentCommits", func(t *testing.T) { testConcurrent(t, newStore(t)) })
	t.Run("ConcurrentExpected", func(t *testing.T) { testConcurrentExpected(t, newStore(t)) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceled(t, newStore(t)) })
	t.Run("Converged", func(t *testing.T) { testConverged(t, newStore(t)) })
	t.Run("Stage", func(t *testing.T) { testStage(t, newStore(t)) })
	t.Run("GetGeneration", func(t *testing.T) { testGetGeneration(t, newStore(t)) })
	t.Run("RetentionCount", func(t *testing.T) { testRetentionCount(t, newRetained, o.reopen) })
	t.Run("RetentionBytes", func(t *testing.T) { testRetentionBytes(t, newRetained, o.reopen) })
	t.Run("DeleteStream", func(t *testing.T) { testDeleteStream(t, newStore(t), o.reopen) })
	if o.reopen != nil {
		t.Run("PersistsAcrossReopen", func(t *testing.T) { testReopen(t, newStore(t), reopen) })
		t.Run("FingerprintKey", func(t *testing.T) { testFingerprintKey(t, newStore(t), reopen) })
	} else {
		t.Run("FingerprintKey", func(t *testing.T) { testFingerprintKey(t, newStore(t), nil) })
	}
}

// testFingerprintKey: the store stores the first fingerprint key offered
// and returns it to every later caller, also after a reopen (fingerprints
// of sink secrets stay the same across restarts).
func testFingerprintKey(t *testing.T, k store.Store, reopen func(*testing.T, store.Store) store.Store) {
	ctx := context.Background()
	first, err := k.FingerprintKey(ctx, []byte("first-key"))
	if err != nil || string(first) != "first-key" {
		t.Fatalf("first FingerprintKey = %q, %v", first, err)
	}
	if again, err := k.FingerprintKey(ctx, []byte("second-key")); err != nil || string(again) != "first-key" {
		t.Fatalf("second FingerprintKey = %q, %v: want the stored first-key", again, err)
	}
	if reopen == nil {
		return
	}
	s2 := reopen(t, k)
	if got, err := s2.FingerprintKey(ctx, []byte("third-key")); err != nil || string(got) != "first-key" {
		t.Fatalf("FingerprintKey after reopen = %q, %v: want first-key", got, err)
	}
}

// Cfg returns a small valid Kong JSON config distinct for each n.
func Cfg(n int) []byte {
	return fmt.Appendf(nil, `{"_format_version":"3.0","services":[{"name":"svc-%d","url":"http://example.com"}]}`, n)
}

// NewStream builds a JSON config of stream name to commit from raw bytes.
func NewStream(name string, raw []byte) *config.Config {
	return config.New(name, 0, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC))
}

// with returns a copy of c with labels and accept time set, and an origin
// that names both.
func with(c *config.Config, labels map[string]string, accepted time.Time) *config.Config {
	return config.New(c.Stream, c.Generation, c.Hash, c.Format, c.Raw, nil, labels, accepted).WithOrigin(config.Origin{
		Pusher: "kic-" + c.Stream, Peer: "10.0.0.1:" + fmt.Sprint(len(labels)), RollbackOf: uint64(len(labels)),
		Entities: map[string]int{"services": 1, "routes": len(labels)},
	})
}

func commit(t *testing.T, s store.Store, c *config.Config, expected uint64) *config.Config {
	t.Helper()
	got, unchanged, err := s.CommitConfig(context.Background(), c, expected)
	if err != nil {
		t.Fatalf("CommitConfig(%s, expected %d): %v", c.Stream, expected, err)
	}
	if unchanged {
		t.Fatalf("CommitConfig(%s): unchanged for a new hash", c.Stream)
	}
	return got
}

// Get reads stream name from s, failing t with the error if the read fails.
func Get(t *testing.T, s store.Store, name string) *config.Config {
	t.Helper()
	got, err := s.GetStream(context.Background(), name)
	if err != nil {
		t.Fatalf("GetStream(%s): %v", name, err)
	}
	return got
}

// sameStream compares every stored field, want's generation being gen.
func sameStream(t *testing.T, what string, got, want *config.Config, gen uint64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no config, want %s gen %d", what, want.Stream, gen)
		return
	}
	if got.Stream != want.Stream || got.Generation != gen || got.Hash != want.Hash || got.Format != want.Format {
		t.Errorf("%s: got %s gen %d hash %.12s format %v, want %s gen %d hash %.12s format %v", what,
			got.Stream, got.Generation, got.Hash, got.Format, want.Stream, gen, want.Hash, want.Format)
	}
	if !bytes.Equal(got.Raw, want.Raw) {
		t.Errorf("%s: config bytes differ (%d vs %d bytes)", what, len(got.Raw), len(want.Raw))
	}
	if len(got.Labels) != len(want.Labels) || !maps.Equal(got.Labels, want.Labels) {
		t.Errorf("%s: labels %v, want %v", what, got.Labels, want.Labels)
	}
	if !got.AcceptTime.Equal(want.AcceptTime) {
		t.Errorf("%s: accept time %v, want %v", what, got.AcceptTime, want.AcceptTime)
	}
	if !sameOrigin(got.Origin, want.Origin) {
		t.Errorf("%s: origin %+v, want %+v", what, got.Origin, want.Origin)
	}
}

func sameOrigin(a, b config.Origin) bool {
	return a.Pusher == b.Pusher && a.Peer == b.Peer && a.RollbackOf == b.RollbackOf && len(a.Entities) == len(b.Entities) && maps.Equal(a.Entities, b.Entities)
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.GetStream(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetStream(unknown) = %v, want ErrNotFound", err)
	}
	if l, err := s.ListStreams(ctx); err != nil || len(l) != 0 {
		t.Fatalf("ListStreams on empty store = %d streams, %v", len(l), err)
	}
	if l, err := s.ListSinks(ctx); err != nil || len(l) != 0 {
		t.Fatalf("ListSinks on empty store = %d, %v", len(l), err)
	}
	if l, err := s.ListApplied(ctx); err != nil || len(l) != 0 {
		t.Fatalf("ListApplied on empty store = %d, %v", len(l), err)
	}
	if err := s.DeleteSink(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteSink(unknown) = %v, want ErrNotFound", err)
	}
}

func testGenerations(t *testing.T, s store.Store) {
	for i := 1; i <= 5; i++ {
		got := commit(t, s, NewStream("a", Cfg(i)), 0)
		if got.Generation != uint64(i) {
			t.Fatalf("commit %d on a: generation %d, want %d", i, got.Generation, i)
		}
	}
	// Generations are per stream: b starts at 1 whatever a is at.
	if got := commit(t, s, NewStream("b", Cfg(1)), 0); got.Generation != 1 {
		t.Fatalf("first commit on b: generation %d, want 1", got.Generation)
	}
	// The generation a caller passes is ignored, and the caller's config
	// is not changed.
	st := NewStream("a", Cfg(100)).WithGeneration(42)
	if got := commit(t, s, st, 0); got.Generation != 6 || st.Generation != 42 {
		t.Fatalf("commit with caller generation 42: got %d, want 6 (caller's config now at %d)", got.Generation, st.Generation)
	}
	// Going back to an older content is a new generation, not a rollback.
	if got := commit(t, s, NewStream("a", Cfg(1)), 0); got.Generation != 7 {
		t.Fatalf("re-commit of older content: generation %d, want 7", got.Generation)
	}
	if g := Get(t, s, "a").Generation; g != 7 {
		t.Fatalf("GetStream(a) generation %d, want 7", g)
	}
}

// testRoundTrip: a config is stored as pushed (a YAML config stays YAML,
// byte for byte, with its labels and accept time), and the stored config
// is the committed one at its generation: the same bytes, not a copy (a
// stored 10 MiB config is held once), and the same JSON form.
func testRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	raw := []byte("_format_version: \"3.0\"\nservices:\n- name: svc-y\n  url: http://example.com\n")
	js := []byte(`{"_format_version":"3.0","services":[{"name":"svc-y","url":"http://example.com"}]}`)
	want := config.New("yaml-stream", 0, config.Hash(raw), config.FormatYAML, raw, js,
		map[string]string{"controller": "kic-0", "k8s-namespace": "kong"}, time.Date(2026, 1, 2, 3, 4, 5, 987654321, time.UTC))
	got := commit(t, s, want, 0)
	sameStream(t, "CommitConfig result", got, want, 1)
	if len(got.Raw) == 0 || &got.Raw[0] != &raw[0] {
		t.Error("CommitConfig returned a copy of the committed bytes: a stored config must hold them once")
	}
	if gotJS, err := got.JSON(); err != nil || len(gotJS) == 0 || &gotJS[0] != &js[0] {
		t.Errorf("CommitConfig result lost the committed config's JSON form (%v): it would be made again", err)
	}
	if want.Generation != 0 {
		t.Errorf("CommitConfig changed the caller's config: generation %d", want.Generation)
	}
	back := Get(t, s, "yaml-stream")
	sameStream(t, "GetStream", back, want, 1)
	if gotJS, err := back.JSON(); err != nil || !bytes.Equal(gotJS, js) {
		t.Errorf("GetStream's JSON form = %s, %v; want %s", gotJS, err, js)
	}

	other := NewStream("json-stream", Cfg(1))
	commit(t, s, other, 0)
	l, err := s.ListStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 2 {
		t.Fatalf("ListStreams: %d streams, want 2", len(l))
	}
	byName := map[string]*config.Config{}
	for _, st := range l {
		byName[st.Stream] = st
	}
	sameStream(t, "ListStreams yaml-stream", byName["yaml-stream"], want, 1)
	sameStream(t, "ListStreams json-stream", byName["json-stream"], other, 1)
}

func testConflict(t *testing.T, s store.Store) {
	ctx := context.Background()
	// expected on a stream that does not exist (generation 0).
	if _, _, err := s.CommitConfig(ctx, NewStream("c", Cfg(1)), 3); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("expected 3 on a new stream: %v, want ErrConflict", err)
	}
	if _, err := s.GetStream(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a conflicting commit created the stream: %v", err)
	}
	commit(t, s, NewStream("c", Cfg(1)), 0)
	second := NewStream("c", Cfg(2))
	if got := commit(t, s, second, 1); got.Generation != 2 {
		t.Fatalf("commit with matching expected: generation %d, want 2", got.Generation)
	}
	for _, exp := range []uint64{1, 3, 100} {
		_, _, err := s.CommitConfig(ctx, NewStream("c", Cfg(3)), exp)
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("expected %d at generation 2: %v, want ErrConflict", exp, err)
		}
	}
	// A stale expected with the current content is still a conflict: the
	// caller's view is stale whatever it sends.
	if _, _, err := s.CommitConfig(ctx, NewStream("c", Cfg(2)), 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale expected with the current hash: %v, want ErrConflict", err)
	}
	sameStream(t, "after conflicts", Get(t, s, "c"), second, 2)
	if got := commit(t, s, NewStream("c", Cfg(3)), 2); got.Generation != 3 {
		t.Fatalf("after conflicts, commit with expected 2: generation %d, want 3", got.Generation)
	}
}

func testUnchanged(t *testing.T, s store.Store) {
	ctx := context.Background()
	first := NewStream("u", Cfg(1))
	first = with(first, map[string]string{"v": "1"}, first.AcceptTime)
	commit(t, s, first, 0)
	again := with(NewStream("u", Cfg(1)), map[string]string{"v": "2"}, first.AcceptTime.Add(time.Hour))
	got, unchanged, err := s.CommitConfig(ctx, again, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !unchanged {
		t.Fatal("same hash: unchanged = false")
	}
	sameStream(t, "unchanged result", got, first, 1)
	sameStream(t, "GetStream after unchanged", Get(t, s, "u"), first, 1)
	// A different hash after that is generation 2.
	if g := commit(t, s, NewStream("u", Cfg(2)), 0).Generation; g != 2 {
		t.Fatalf("next new content: generation %d, want 2", g)
	}
}

func testLarge(t *testing.T, s store.Store, n int) {
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte('a' + i%23)
	}
	st := NewStream("large", raw)
	sameStream(t, "large commit", commit(t, s, st, 0), st, 1)
	sameStream(t, "large get", Get(t, s, "large"), st, 1)
	// Replacing a large config with a small one leaves only the small one.
	small := NewStream("large", Cfg(1))
	commit(t, s, small, 1)
	sameStream(t, "small after large", Get(t, s, "large"), small, 2)
	// And a large one again.
	big := NewStream("large", bytes.Repeat([]byte("z"), n+1))
	commit(t, s, big, 2)
	sameStream(t, "large again", Get(t, s, "large"), big, 3)
}

func sinkSpec(name, stream, dir string) *confighubv1.Sink {
	return &confighubv1.Sink{
		Name:   name,
		Kind:   "file",
		Stream: stream,
		Options: &confighubv1.SinkOptions{
			Timeout: durationpb.New(3 * time.Second),
		},
		Spec: &confighubv1.Sink_File{File: &confighubv1.FileSpec{Path: dir + "/kong.json"}},
	}
}

func testSinks(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := sinkSpec("gw-a", "default", "/a")
	b := sinkSpec("gw-b", "other", "/b")
	for _, sp := range []*confighubv1.Sink{b, a} {
		if err := s.PutSink(ctx, sp); err != nil {
			t.Fatalf("PutSink(%s): %v", sp.Name, err)
		}
	}
	l, err := s.ListSinks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 2 {
		t.Fatalf("ListSinks: %d, want 2", len(l))
	}
	got := map[string]*confighubv1.Sink{}
	for _, sp := range l {
		got[sp.Name] = sp
	}
	if !proto.Equal(got["gw-a"], a) || !proto.Equal(got["gw-b"], b) {
		t.Fatalf("ListSinks returned %v, want %v and %v", l, a, b)
	}
	// Replace.
	a2 := sinkSpec("gw-a", "default", "/a2")
	if err := s.PutSink(ctx, a2); err != nil {
		t.Fatal(err)
	}
	// Changing the caller's message after Put must not change the store.
	a2.GetFile().Path = "/changed"
	l, _ = s.ListSinks(ctx)
	for _, sp := range l {
		if sp.Name == "gw-a" && sp.GetFile().GetPath() != "/a2/kong.json" {
			t.Fatalf("after replace gw-a has path %q, want /a2/kong.json", sp.GetFile().GetPath())
		}
	}
	if err := s.DeleteSink(ctx, "gw-a"); err != nil {
		t.Fatalf("DeleteSink(gw-a): %v", err)
	}
	if err := s.DeleteSink(ctx, "gw-a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteSink(gw-a) = %v, want ErrNotFound", err)
	}
	l, _ = s.ListSinks(ctx)
	if len(l) != 1 || l[0].Name != "gw-b" {
		t.Fatalf("after delete ListSinks = %v, want only gw-b", l)
	}
}

func testApplied(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)
	recs := []store.Applied{
		{Sink: "gw-1", Stream: "default", Generation: 3, Hash: config.Hash(Cfg(3)), Time: at},
		{Sink: "gw-2", Stream: "default", Generation: 2, Hash: config.Hash(Cfg(2)), Time: at.Add(time.Second)},
	}
	for _, r := range recs {
		if err := s.RecordApplied(ctx, r); err != nil {
			t.Fatalf("RecordApplied(%s): %v", r.Sink, err)
		}
	}
	// Overwrite gw-2.
	recs[1] = store.Applied{Sink: "gw-2", Stream: "default", Generation: 4, Hash: config.Hash(Cfg(4)), Time: at.Add(2 * time.Second)}
	if err := s.RecordApplied(ctx, recs[1]); err != nil {
		t.Fatal(err)
	}
	checkApplied(t, s, recs)

	// Deleting a sink drops its applied record (even one with no stored spec,
	// e.g. a sink from the start-up file).
	if err := s.PutSink(ctx, sinkSpec("gw-1", "default", "/x")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSink(ctx, "gw-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSink(ctx, "gw-2"); err != nil {
		t.Fatalf("DeleteSink of a sink with only an applied record: %v", err)
	}
	checkApplied(t, s, nil)
}

func checkApplied(t *testing.T, s store.Store, want []store.Applied) {
	t.Helper()
	l, err := s.ListApplied(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != len(want) {
		t.Fatalf("ListApplied: %d records, want %d: %+v", len(l), len(want), l)
	}
	got := map[string]store.Applied{}
	for _, a := range l {
		got[a.Sink] = a
	}
	for _, w := range want {
		g := got[w.Sink]
		if g.Stream != w.Stream || g.Generation != w.Generation || g.Hash != w.Hash || !g.Time.Equal(w.Time) {
			t.Errorf("applied %s = %+v, want %+v", w.Sink, g, w)
		}
	}
}

func testConcurrent(t *testing.T, s store.Store) {
	const workers, each = 8, 8
	ctx := context.Background()
	gens := make(chan uint64, workers*each)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				got, unchanged, err := s.CommitConfig(ctx, NewStream("conc", Cfg(w*1000+i)), 0)
				if err != nil || unchanged {
					errs <- fmt.Errorf("worker %d commit %d: unchanged=%v err=%v", w, i, unchanged, err)
					continue
				}
				gens <- got.Generation
			}
		})
	}
	wg.Wait()
	close(gens)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[uint64]bool{}
	for g := range gens {
		if seen[g] {
			t.Fatalf("generation %d handed out twice", g)
		}
		seen[g] = true
	}
	for g := uint64(1); g <= workers*each; g++ {
		if !seen[g] {
			t.Fatalf("generation %d never handed out (got %d generations)", g, len(seen))
		}
	}
	if g := Get(t, s, "conc").Generation; g != workers*each {
		t.Fatalf("final generation %d, want %d", g, workers*each)
	}
}

// testConcurrentExpected: several writers all expecting the same generation;
// exactly one wins, the others get ErrConflict.
func testConcurrentExpected(t *testing.T, s store.Store) {
	ctx := context.Background()
	commit(t, s, NewStream("race", Cfg(0)), 0)
	const writers = 6
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			_, _, err := s.CommitConfig(ctx, NewStream("race", Cfg(w+1)), 1)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	wins := 0
	for err := range results {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrConflict):
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won with expected 1, want exactly 1", wins)
	}
	if g := Get(t, s, "race").Generation; g != 2 {
		t.Fatalf("generation after the race %d, want 2", g)
	}
}

func testCanceled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.CommitConfig(ctx, NewStream("x", Cfg(1)), 0); err == nil {
		t.Fatal("CommitConfig with a canceled context succeeded")
	}
	if _, err := s.GetStream(context.Background(), "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a canceled commit stored the stream: %v", err)
	}
}

// testReopen: everything stored survives a reopen (a restart): each
// stream's bytes, format, hash, generation, labels and accept time, the
// sinks, applied and convergence records; generations continue.
func testReopen(t *testing.T, s store.Store, reopen func(*testing.T, store.Store) store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 2, 3, 4, 5, 6, 789, time.UTC)
	commit(t, s, with(NewStream("p", Cfg(1)), map[string]string{"k": "v"}, at), 0)
	last := with(NewStream("p", Cfg(2)), map[string]string{"k": "w", "controller": "kic-1"}, at.Add(time.Second))
	commit(t, s, last, 1)
	yraw := []byte("_format_version: \"3.0\"\nservices: []\n")
	q := config.New("q", 0, config.Hash(yraw), config.FormatYAML, yraw, nil, map[string]string{"q": "1"}, at.Add(time.Minute))
	commit(t, s, q, 0)
	sp := sinkSpec("gw-p", "p", "/p")
	if err := s.PutSink(ctx, sp); err != nil {
		t.Fatal(err)
	}
	ap := store.Applied{Sink: "gw-p", Stream: "p", Generation: 2, Hash: last.Hash, Time: time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)}
	if err := s.RecordApplied(ctx, ap); err != nil {
		t.Fatal(err)
	}

	conv := store.Converged{Stream: "p", Generation: 2, Time: time.Date(2026, 1, 1, 0, 0, 0, 42_000_005, time.UTC)}
	if err := s.RecordConverged(ctx, conv); err != nil {
		t.Fatal(err)
	}

	s2 := reopen(t, s)
	sameStream(t, "p after reopen", Get(t, s2, "p"), last, 2)
	sameStream(t, "q after reopen", Get(t, s2, "q"), q, 1)
	l, err := s2.ListStreams(ctx)
	if err != nil || len(l) != 2 {
		t.Fatalf("streams after reopen: %d, %v", len(l), err)
	}
	sameStream(t, "listed p after reopen", l[0], last, 2)
	sameStream(t, "listed q after reopen", l[1], q, 1)
	sl, err := s2.ListSinks(ctx)
	if err != nil || len(sl) != 1 || !proto.Equal(sl[0], sp) {
		t.Fatalf("sinks after reopen: %v, %v", sl, err)
	}
	checkApplied(t, s2, []store.Applied{ap})
	checkConverged(t, s2, []store.Converged{conv})
	// Generations continue after a reopen, and expected still holds.
	if _, _, err := s2.CommitConfig(ctx, NewStream("p", Cfg(3)), 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale expected after reopen: %v, want ErrConflict", err)
	}
	if g := commit(t, s2, NewStream("p", Cfg(3)), 2).Generation; g != 3 {
		t.Fatalf("first commit after reopen: generation %d, want 3", g)
	}
}

// testConverged: a stream's convergence record round-trips with its exact
// time, and a later one replaces it, so a restarted hub (or, on etcd, any
// replica) shows it as observed and does not observe it again.
func testConverged(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 5, 6, 7, 8, 9, 42_000_010, time.UTC)
	recs := []store.Converged{
		{Stream: "a", Generation: 3, Time: at},
		{Stream: "b", Generation: 1, Time: at.Add(time.Second)},
	}
	for _, c := range recs {
		if err := s.RecordConverged(ctx, c); err != nil {
			t.Fatalf("RecordConverged(%s): %v", c.Stream, err)
		}
	}
	recs[0] = store.Converged{Stream: "a", Generation: 4, Time: at.Add(time.Minute)}
	if err := s.RecordConverged(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	checkConverged(t, s, recs)
}

func checkConverged(t *testing.T, s store.Store, want []store.Converged) {
	t.Helper()
	got, err := s.ListConverged(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ListConverged: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Stream != want[i].Stream || got[i].Generation != want[i].Generation || !got[i].Time.Equal(want[i].Time) {
			t.Errorf("converged %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// testGetGeneration: the store reads each retained generation back with
// its bytes, hash, labels and origin; a generation not committed yet (or
// 0) is ErrNotRetained naming the retained range, an unknown stream
// ErrNotFound.
func testGetGeneration(t *testing.T, s store.Store) {
	ctx := context.Background()
	var want []*config.Config
	for i := 1; i <= 2; i++ {
		c := NewStream("p", Cfg(i))
		want = append(want, commit(t, s, with(c, map[string]string{"n": fmt.Sprint(i)}, c.AcceptTime), 0))
	}
	for _, w := range want {
		got, err := s.GetGeneration(ctx, "p", w.Generation)
		if err != nil {
			t.Fatalf("GetGeneration(p, %d): %v", w.Generation, err)
		}
		sameStream(t, fmt.Sprintf("GetGeneration(p, %d)", w.Generation), got, w, w.Generation)
	}
	for _, gen := range []uint64{3, 0} {
		_, err := s.GetGeneration(ctx, "p", gen)
		if !errors.Is(err, store.ErrNotRetained) || !strings.Contains(fmt.Sprint(err), "keeps generations 1-2") {
			t.Errorf("GetGeneration(p, %d): %v, want ErrNotRetained naming 1-2", gen, err)
		}
	}
	if _, err := s.GetGeneration(ctx, "nope", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetGeneration(nope, 1): %v, want ErrNotFound", err)
	}
	if _, err := s.ListGenerations(ctx, "nope", 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListGenerations(nope): %v, want ErrNotFound", err)
	}
}

// testStage: staged bytes are invisible until Commit, which stores them as
// CommitConfig would; a discarded stage stores nothing; a streamed stage
// takes its announced size, no more, and commits the bytes written.
func testStage(t *testing.T, s store.Store) {
	ctx := context.Background()
	raw := Cfg(1)
	sum := config.NewHasher()
	st, err := s.StageConfig(ctx, "st", raw, sum)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sum() != config.Hash(raw) {
		t.Error("StageConfig did not feed tee all of the bytes")
	}
	if _, err := s.GetStream(ctx, "st"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a staged config is visible: %v", err)
	}
	got, unchanged, err := st.Commit(ctx, NewStream("st", raw), 0)
	if err != nil || unchanged || got.Generation != 1 {
		t.Fatalf("Commit of a stage: gen %v, unchanged %v, %v", got, unchanged, err)
	}
	_ = st.Discard() // a no-op after Commit
	sameStream(t, "staged then committed", Get(t, s, "st"), NewStream("st", raw), 1)

	dropped, err := s.StageConfig(ctx, "st", Cfg(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := dropped.Discard(); err != nil {
		t.Fatal(err)
	}
	if g := Get(t, s, "st").Generation; g != 1 {
		t.Fatalf("a discarded stage moved the stream to generation %d", g)
	}

	big := Cfg(3)
	w, err := s.StageStream(ctx, "st", int64(len(big)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(big[:10]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(big[10:]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("a write past the announced size succeeded")
	}
	sst, err := w.Staged()
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := sst.Commit(ctx, NewStream("st", big), 1); err != nil || got.Generation != 2 {
		t.Fatalf("Commit of a streamed stage: %v, %v", got, err)
	}
	sameStream(t, "streamed stage", Get(t, s, "st"), NewStream("st", big), 2)

	w, err = s.StageStream(ctx, "st", 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.Discard(); err != nil {
		t.Fatal(err)
	}
	if g := Get(t, s, "st").Generation; g != 2 {
		t.Fatalf("a discarded streamed stage moved the stream to generation %d", g)
	}
}

// checkGenerations checks that stream p retains exactly the generations
// of want (newest first), each with its fields and bytes, and that older
// ones are ErrNotRetained naming the range.
func checkGenerations(t *testing.T, s store.Store, what string, want []*config.Config) {
	t.Helper()
	ctx := context.Background()
	got, err := s.ListGenerations(ctx, "p", 0, 0)
	if err != nil {
		t.Fatalf("%s: ListGenerations: %v", what, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: ListGenerations returned %d generations, want %d: %+v", what, len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Stream != "p" || g.Generation != w.Generation || g.Hash != w.Hash || g.Size != int64(len(w.Raw)) ||
			!maps.Equal(g.Labels, w.Labels) || !g.AcceptTime.Equal(w.AcceptTime) || !sameOrigin(g.Origin, w.Origin) {
			t.Errorf("%s: generation %d listed as %+v, want %+v", what, i, g, store.MetaOf(w, w.Generation).Info(w.Stream))
		}
		c, err := s.GetGeneration(ctx, "p", w.Generation)
		if err != nil {
			t.Fatalf("%s: GetGeneration(%d): %v", what, w.Generation, err)
		}
		sameStream(t, fmt.Sprintf("%s: GetGeneration(%d)", what, w.Generation), c, w, w.Generation)
	}
	oldest, newest := want[len(want)-1].Generation, want[0].Generation
	if oldest > 1 {
		_, err := s.GetGeneration(ctx, "p", oldest-1)
		if msg := fmt.Sprintf("keeps generations %d-%d", oldest, newest); !errors.Is(err, store.ErrNotRetained) || !strings.Contains(fmt.Sprint(err), msg) {
			t.Errorf("%s: GetGeneration(%d): %v, want ErrNotRetained saying %q", what, oldest-1, err, msg)
		}
	}
}

// testRetentionCount: with History 3 the last three generations are kept
// with their bytes and fields, the oldest going first, a page is the
// generations older than before, and (on a durable store) all of it
// survives a reopen and the retention goes on after it.
func testRetentionCount(t *testing.T, newStore NewStore, reopen Reopen) {
	r := store.Retention{History: 3, Bytes: store.DefaultHistoryBytes}
	s := newStore(t, r)
	ctx := context.Background()
	at := time.Date(2026, 4, 5, 6, 7, 8, 9, time.UTC)
	var all []*config.Config
	for i := 1; i <= 5; i++ {
		all = append(all, commit(t, s, with(NewStream("p", Cfg(i)), map[string]string{"n": fmt.Sprint(i)}, at.Add(time.Duration(i)*time.Second)), 0))
	}
	commit(t, s, NewStream("other", Cfg(1)), 0)
	kept := []*config.Config{all[4], all[3], all[2]}
	checkGenerations(t, s, "after 5 commits", kept)
	for _, c := range []struct {
		before uint64
		limit  int
		want   []uint64
	}{{0, 0, []uint64{5, 4, 3}}, {0, 2, []uint64{5, 4}}, {5, 1, []uint64{4}}, {4, 0, []uint64{3}}, {3, 0, nil}, {100, 2, []uint64{5, 4}}} {
		page, err := s.ListGenerations(ctx, "p", c.before, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var gens []uint64
		for _, g := range page {
			gens = append(gens, g.Generation)
		}
		if !slices.Equal(gens, c.want) {
			t.Errorf("ListGenerations(before %d, limit %d) = %v, want %v", c.before, c.limit, gens, c.want)
		}
	}
	if reopen == nil {
		return
	}
	s = reopen(t, s, r)
	checkGenerations(t, s, "after reopen", kept)
	next := commit(t, s, with(NewStream("p", Cfg(6)), map[string]string{"n": "6"}, at.Add(time.Minute)), 5)
	checkGenerations(t, s, "after a commit after reopen", []*config.Config{next, all[4], all[3]})
}

// testRetentionBytes: the byte bound drops the oldest generations once the
// kept ones would exceed it, before the count does; the current one is
// kept even when it alone exceeds it.
func testRetentionBytes(t *testing.T, newStore NewStore, reopen Reopen) {
	n := len(Cfg(1))
	r := store.Retention{History: 50, Bytes: int64(2*n + n/2)}
	s := newStore(t, r)
	var all []*config.Config
	for i := 1; i <= 4; i++ {
		all = append(all, commit(t, s, NewStream("p", Cfg(i)), 0))
	}
	checkGenerations(t, s, "4 commits under a bound of 2.5 configs", []*config.Config{all[3], all[2]})
	huge := commit(t, s, NewStream("p", append(Cfg(5), bytes.Repeat([]byte(" "), 3*n)...)), 0)
	checkGenerations(t, s, "a config over the bound", []*config.Config{huge})
	if reopen != nil {
		s = reopen(t, s, r)
		checkGenerations(t, s, "after reopen", []*config.Config{huge})
	}
	small := commit(t, s, NewStream("p", Cfg(6)), 0)
	checkGenerations(t, s, "a small config after it", []*config.Config{small})
}

// testDeleteStream: DeleteStream removes the stream's config, its retained
// generations and its convergence record, and nothing of another stream;
// a stream deleted or never made is ErrNotFound; the name can be used
// again; (on a durable store) the deletion survives a reopen.
func testDeleteStream(t *testing.T, s store.Store, reopen Reopen) {
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		commit(t, s, NewStream("p", Cfg(i)), 0)
	}
	q := commit(t, s, NewStream("q", Cfg(9)), 0)
	for _, c := range []store.Converged{{Stream: "p", Generation: 3, Time: time.Unix(1, 0).UTC()}, {Stream: "q", Generation: 1, Time: time.Unix(2, 0).UTC()}} {
		if err := s.RecordConverged(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteStream(ctx, "p"); err != nil {
		t.Fatalf("DeleteStream(p): %v", err)
	}
	check := func(what string, s store.Store) {
		t.Helper()
		if _, err := s.GetStream(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: GetStream(p) = %v, want ErrNotFound", what, err)
		}
		if _, err := s.ListGenerations(ctx, "p", 0, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: ListGenerations(p) = %v, want ErrNotFound", what, err)
		}
		if _, err := s.GetGeneration(ctx, "p", 2); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: GetGeneration(p, 2) = %v, want ErrNotFound", what, err)
		}
		if err := s.DeleteStream(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: DeleteStream(p) again = %v, want ErrNotFound", what, err)
		}
		l, err := s.ListStreams(ctx)
		if err != nil || len(l) != 1 || l[0].Stream != "q" {
			t.Errorf("%s: ListStreams = %v, %v; want q alone", what, l, err)
		}
		sameStream(t, what+": q", Get(t, s, "q"), q, 1)
		checkConverged(t, s, []store.Converged{{Stream: "q", Generation: 1, Time: time.Unix(2, 0).UTC()}})
	}
	check("after DeleteStream", s)
	if reopen != nil {
		s = reopen(t, s, store.DefaultRetention())
		check("after reopen", s)
	}
	if err := s.DeleteStream(ctx, "never"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteStream(never) = %v, want ErrNotFound", err)
	}
	again := commit(t, s, NewStream("p", Cfg(7)), 0)
	sameStream(t, "p made again", Get(t, s, "p"), again, again.Generation)
	if l, err := s.ListGenerations(ctx, "p", 0, 0); err != nil || len(l) != 1 {
		t.Errorf("p made again lists %v, %v; want its one generation", l, err)
	}
}
