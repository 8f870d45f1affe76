package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/plugin"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakePlugin is an in-process SinkPluginService that records what it got.
type fakePlugin struct {
	sinkv1.UnimplementedSinkPluginServiceServer
	mu        sync.Mutex
	desc      *sinkv1.DescribeResponse
	resp      *sinkv1.ApplyResponse
	hang      bool
	describes int
	got       []received
}

type received struct {
	hdr      *sinkv1.ApplyHeader
	body     []byte
	chunks   int
	maxChunk int
}

func (p *fakePlugin) Describe(_ context.Context, r *sinkv1.DescribeRequest) (*sinkv1.DescribeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.describes++
	if p.desc == nil {
		return &sinkv1.DescribeResponse{Name: "fake"}, nil
	}
	return p.desc, nil
}

func (p *fakePlugin) Apply(st grpc.ClientStreamingServer[sinkv1.ApplyRequest, sinkv1.ApplyResponse]) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	rec := received{hdr: first.GetHeader()}
	if rec.hdr == nil {
		return status.Error(codes.InvalidArgument, "first message must be a header")
	}
	var buf bytes.Buffer
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rec.chunks++
		rec.maxChunk = max(rec.maxChunk, len(m.GetChunk()))
		buf.Write(m.GetChunk())
	}
	rec.body = buf.Bytes()
	if uint64(buf.Len()) != rec.hdr.GetTotalSize() {
		return status.Errorf(codes.InvalidArgument, "got %d bytes, header said %d", buf.Len(), rec.hdr.GetTotalSize())
	}
	p.mu.Lock()
	p.got = append(p.got, rec)
	hang, resp := p.hang, p.resp
	p.mu.Unlock()
	if hang {
		<-st.Context().Done()
		return st.Context().Err()
	}
	if resp == nil {
		resp = &sinkv1.ApplyResponse{Applied: true}
	}
	return st.SendAndClose(resp)
}

func (p *fakePlugin) received() []received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]received(nil), p.got...)
}

// serve runs p on addr ("127.0.0.1:0" for a new port) until the test ends
// or stop is called.
func serve(t *testing.T, addr string, p *fakePlugin) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	sinkv1.RegisterSinkPluginServiceServer(srv, p)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { srv.Stop(); <-done }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func newSink(t *testing.T, addr string, settings *structpb.Struct) *plugin.Sink {
	t.Helper()
	r := sink.NewRegistry()
	if err := plugin.RegisterWith(r, plugin.Options{
		Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond},
		MinConnectTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	k, _ := r.Lookup("plugin")
	spec := &confighubv1.Sink{Name: "hook", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: addr, Settings: settings}}}
	s, err := k.Factory(spec, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.(sink.Closer).Close() })
	return s.(*plugin.Sink)
}

func mkConfig(t *testing.T, gen uint64, raw []byte) *config.Config {
	t.Helper()
	ch, err := config.Check(raw, config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	return config.New("default", gen, config.Hash(raw), ch.Format, raw, ch.JSON, map[string]string{"by": "test"}, time.Unix(0, 0))
}

// bigConfig is a valid Kong config of at least n bytes.
func bigConfig(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"svc-%d","url":"http://backend-%d.example:8080/path","tags":["k8s-name:svc-%d"]}`, i, i, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestApplyChunksLargeConfig(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunk     uint32
		wantChunk int
	}{
		{"default 1 MiB", 0, 1 << 20},
		{"plugin asks 64 KiB", 64 << 10, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePlugin{desc: &sinkv1.DescribeResponse{ChunkBytes: tc.chunk}}
			addr, _ := serve(t, "127.0.0.1:0", p)
			settings, _ := structpb.NewStruct(map[string]any{"team": "edge"})
			s := newSink(t, addr, settings)
			raw := bigConfig(3<<20 + 12345)
			// Built directly: config.Check of 5 MiB is slow under -race and
			// not what this test is about.
			cfg := config.New("default", 7, config.Hash(raw), config.FormatJSON, raw, nil, map[string]string{"by": "test"}, time.Unix(0, 0))
			if err := s.Apply(ctxT(t), cfg); err != nil {
				t.Fatal(err)
			}
			got := p.received()
			if len(got) != 1 {
				t.Fatalf("plugin got %d applies, want 1", len(got))
			}
			r := got[0]
			if config.Hash(r.body) != cfg.Hash || r.hdr.GetHash() != cfg.Hash {
				t.Fatalf("reassembled hash %s, header %s, want %s", config.Hash(r.body), r.hdr.GetHash(), cfg.Hash)
			}
			wantChunks := (len(raw) + tc.wantChunk - 1) / tc.wantChunk
			if r.chunks != wantChunks || r.maxChunk != tc.wantChunk {
				t.Fatalf("got %d chunks of at most %d bytes, want %d of %d", r.chunks, r.maxChunk, wantChunks, tc.wantChunk)
			}
			h := r.hdr
			if h.GetSink() != "hook" || h.GetStream() != "default" || h.GetGeneration() != 7 ||
				h.GetFormat() != sinkv1.Format_FORMAT_JSON || h.GetLabels()["by"] != "test" ||
				h.GetSettings().GetFields()["team"].GetStringValue() != "edge" {
				t.Fatalf("header %v", h)
			}
		})
	}
}

func TestApplyConvertsToAcceptedFormat(t *testing.T) {
	const js = `{"_format_version":"3.0","services":[{"name":"a","url":"http://a.example"}]}`
	yml, err := yaml.JSONToYAML([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		formats []sinkv1.Format
		raw     []byte
		want    sinkv1.Format
	}{
		{"YAML push to a plugin naming no format gets JSON", nil, yml, sinkv1.Format_FORMAT_JSON},
		{"JSON push to a YAML-only plugin gets YAML", []sinkv1.Format{sinkv1.Format_FORMAT_YAML}, []byte(js), sinkv1.Format_FORMAT_YAML},
		{"YAML push to a plugin taking both stays as pushed", []sinkv1.Format{sinkv1.Format_FORMAT_JSON, sinkv1.Format_FORMAT_YAML}, yml, sinkv1.Format_FORMAT_YAML},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePlugin{desc: &sinkv1.DescribeResponse{Formats: tc.formats}}
			addr, _ := serve(t, "127.0.0.1:0", p)
			s := newSink(t, addr, nil)
			if err := s.Apply(ctxT(t), mkConfig(t, 1, tc.raw)); err != nil {
				t.Fatal(err)
			}
			r := p.received()[0]
			if r.hdr.GetFormat() != tc.want {
				t.Fatalf("format %v, want %v", r.hdr.GetFormat(), tc.want)
			}
			// Same content whatever the encoding.
			j1, err := yaml.YAMLToJSON(r.body)
			if err != nil {
				t.Fatal(err)
			}
			j2, _ := yaml.YAMLToJSON([]byte(js))
			if !bytes.Equal(j1, j2) {
				t.Fatalf("content differs: %s", r.body)
			}
			if tc.want == sinkv1.Format_FORMAT_JSON && r.body[0] != '{' {
				t.Fatalf("not JSON: %s", r.body)
			}
		})
	}
}

func TestApplyMapsResponses(t *testing.T) {
	ee := &sinkv1.EntityError{EntityType: "service", EntityName: "svc", EntityId: "123", EntityTags: []string{"k8s-name:svc"},
		Errors: []*sinkv1.FieldError{{Type: "field", Field: "url", Message: "bad url"}}}
	for _, tc := range []struct {
		name string
		resp *sinkv1.ApplyResponse
		want sink.Error
	}{
		{"rejected with entity errors", &sinkv1.ApplyResponse{Message: "invalid", Permanent: true, EntityErrors: []*sinkv1.EntityError{ee}},
			sink.Error{Code: "rejected", Message: "invalid", Permanent: true}},
		{"rate limited", &sinkv1.ApplyResponse{Message: "busy", RetryAfter: durationpb.New(7 * time.Second)},
			sink.Error{Code: "rate-limited", Message: "busy", RetryAfter: 7 * time.Second}},
		{"own code mapped, kept in the message", &sinkv1.ApplyResponse{Code: "webhook-500", Message: "boom"},
			sink.Error{Code: sink.CodeUnavailable, Message: `plugin code "webhook-500": boom`}},
		{"own permanent code mapped", &sinkv1.ApplyResponse{Code: "schema", Message: "no", Permanent: true},
			sink.Error{Code: sink.CodeRejected, Message: `plugin code "schema": no`, Permanent: true}},
		{"known code kept", &sinkv1.ApplyResponse{Code: "too-large", Message: "big", Permanent: true},
			sink.Error{Code: sink.CodeTooLarge, Message: "big", Permanent: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePlugin{resp: tc.resp}
			addr, _ := serve(t, "127.0.0.1:0", p)
			s := newSink(t, addr, nil)
			e, ok := sink.AsError(s.Apply(ctxT(t), mkConfig(t, 1, bigConfig(10))))
			if !ok {
				t.Fatal("want a *sink.Error")
			}
			if e.Code != tc.want.Code || e.Message != tc.want.Message || e.Permanent != tc.want.Permanent || e.RetryAfter != tc.want.RetryAfter {
				t.Fatalf("got %+v, want %+v", e, tc.want)
			}
			if len(tc.resp.GetEntityErrors()) > 0 {
				if len(e.EntityErrors) != 1 {
					t.Fatalf("entity errors %v", e.EntityErrors)
				}
				g := e.EntityErrors[0]
				if g.GetEntityType() != "service" || g.GetEntityName() != "svc" || g.GetEntityId() != "123" ||
					g.GetEntityTags()[0] != "k8s-name:svc" || g.GetErrors()[0].GetField() != "url" ||
					g.GetErrors()[0].GetMessage() != "bad url" || g.GetErrors()[0].GetType() != "field" {
					t.Fatalf("entity error %v", g)
				}
			}
		})
	}
}

func TestApplyTooLargeIsPermanentWithoutCall(t *testing.T) {
	p := &fakePlugin{desc: &sinkv1.DescribeResponse{MaxConfigBytes: 1000, EntityErrors: true}}
	addr, _ := serve(t, "127.0.0.1:0", p)
	s := newSink(t, addr, nil)
	e, ok := sink.AsError(s.Apply(ctxT(t), mkConfig(t, 1, bigConfig(2000))))
	if !ok || !e.Permanent || e.Code != sink.CodeTooLarge {
		t.Fatalf("want permanent too-large, got %v", e)
	}
	if n := len(p.received()); n != 0 {
		t.Fatalf("plugin got %d applies", n)
	}
}

func TestServerDownIsRetryableUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newSink(t, addr, nil)
	e, ok := sink.AsError(s.Apply(ctxT(t), mkConfig(t, 1, bigConfig(10))))
	if !ok || e.Permanent || e.Code != "unavailable" || status.Code(e.Err) != codes.Unavailable {
		t.Fatalf("want retryable unavailable, got %+v", e)
	}
}

func TestSlowPluginBoundedByContext(t *testing.T) {
	p := &fakePlugin{hang: true}
	addr, _ := serve(t, "127.0.0.1:0", p)
	s := newSink(t, addr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	e, ok := sink.AsError(s.Apply(ctx, mkConfig(t, 1, bigConfig(10))))
	if !ok || e.Permanent || e.Code != "timeout" {
		t.Fatalf("want retryable timeout, got %+v", e)
	}
}

// notifier records what Run reports.
type notifier struct {
	health chan error
	resync chan string
}

func (n *notifier) Resync(reason string)                   { n.resync <- reason }
func (n *notifier) Health(err error)                       { n.health <- err }
func (n *notifier) DataPlane(*confighubv1.DataPlaneStatus) {}

func waitHealth(t *testing.T, n *notifier, healthy bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case err := <-n.health:
			if (err == nil) == healthy {
				return
			}
		case <-n.resync:
		case <-timeout:
			t.Fatalf("no health report (healthy=%v) within 10s", healthy)
		}
	}
}

func TestReconnectRedescribesAndResyncs(t *testing.T) {
	p1 := &fakePlugin{desc: &sinkv1.DescribeResponse{MaxConfigBytes: 1 << 30}}
	addr, stop := serve(t, "127.0.0.1:0", p1)
	s := newSink(t, addr, nil)
	n := &notifier{health: make(chan error, 100), resync: make(chan string, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, n) }()
	defer func() { cancel(); <-done }()

	waitHealth(t, n, true)
	cfg := mkConfig(t, 3, bigConfig(3000))
	if err := s.Apply(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}

	stop()
	waitHealth(t, n, false)
	e, ok := sink.AsError(s.Apply(ctxT(t), cfg))
	if !ok || e.Permanent || e.Code != "unavailable" {
		t.Fatalf("plugin down: want retryable unavailable, got %v", e)
	}

	// The plugin comes back on the same address with a smaller limit.
	p2 := &fakePlugin{desc: &sinkv1.DescribeResponse{MaxConfigBytes: 2000}}
	serve(t, addr, p2)
	select {
	case <-n.resync:
	case <-time.After(10 * time.Second):
		t.Fatal("no resync after the plugin came back")
	}
	// Re-described: the new limit applies.
	e, ok = sink.AsError(s.Apply(ctxT(t), cfg))
	if !ok || e.Code != sink.CodeTooLarge {
		t.Fatalf("want too-large from the new Describe, got %v", e)
	}
	p2.mu.Lock()
	p2.desc = &sinkv1.DescribeResponse{}
	p2.mu.Unlock()
	// A smaller config goes through on the new connection.
	if err := s.Apply(ctxT(t), mkConfig(t, 4, bigConfig(10))); err != nil {
		t.Fatal(err)
	}
	if got := p2.received(); len(got) != 1 || got[0].hdr.GetGeneration() != 4 {
		t.Fatalf("restarted plugin got %v", got)
	}
}

func TestFactoryRejectsBadSpecs(t *testing.T) {
	r := sink.NewRegistry()
	if err := plugin.Register(r); err != nil {
		t.Fatal(err)
	}
	k, _ := r.Lookup("plugin")
	if got := k.Defaults.GetBackoff().GetMax().AsDuration(); got != plugin.DefaultBackoffMax {
		t.Errorf("default backoff max %v, want %v", got, plugin.DefaultBackoffMax)
	}
	for name, spec := range map[string]*confighubv1.Sink{
		"bad CA":       {Name: "p", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: "127.0.0.1:1", Tls: &confighubv1.TLS{CaPem: "nope"}}}},
		"missing file": {Name: "p", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: "127.0.0.1:1", Tls: &confighubv1.TLS{CaFile: "/no/such/ca.pem"}}}},
		"cert no key":  {Name: "p", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: "127.0.0.1:1", Tls: &confighubv1.TLS{CertPem: "x"}}}},
	} {
		_, err := k.Factory(spec, sink.Deps{})
		if !errors.Is(err, sink.ErrInvalidSpec) || !strings.Contains(err.Error(), `"p"`) {
			t.Errorf("%s: want ErrInvalidSpec naming the sink, got %v", name, err)
		}
	}
}

// Describe is asked once per connection, not once per apply.
func TestDescribeCachedPerConnection(t *testing.T) {
	p := &fakePlugin{}
	addr, _ := serve(t, "127.0.0.1:0", p)
	s := newSink(t, addr, nil)
	for gen := uint64(1); gen <= 3; gen++ {
		if err := s.Apply(ctxT(t), mkConfig(t, gen, bigConfig(10))); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.describes != 1 || len(p.got) != 3 {
		t.Fatalf("%d describes for %d applies on one connection, want 1", p.describes, len(p.got))
	}
}
