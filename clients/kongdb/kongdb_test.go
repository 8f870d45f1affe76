package kongdb

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegister(t *testing.T) {
	r := sink.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("kong-db"); !ok {
		t.Fatal("kong-db not registered")
	}
}

func TestFactoryRejectsBadSpecs(t *testing.T) {
	for _, s := range []*confighubv1.Sink{
		{Name: "a", Kind: Kind},
		{Name: "b", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{}}},
		{Name: "c", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{Address: "not a url"}}},
		{Name: "d", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{Address: "http://x", Tls: &confighubv1.TLS{KeyPem: "k"}}}},
	} {
		if _, err := New(s, sink.Deps{}); err == nil || !errors.Is(err, sink.ErrInvalidSpec) || !strings.Contains(err.Error(), s.Name) {
			t.Errorf("New(%v) = %v, want an invalid spec naming the sink", s, err)
		}
	}
}

// TestApplySendsHeadersAndSyncs: a kong-db sink syncs a fixture into the
// DB-mode root with its headers on every request.
func TestApplySendsHeadersAndSyncs(t *testing.T) {
	api := kongemu.NewEntityAPI()
	var mu sync.Mutex
	missing := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Kong-Admin-Token") != "s3cret" {
			mu.Lock()
			missing++
			mu.Unlock()
		}
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s, err := New(&confighubv1.Sink{Name: "gw-db", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{
		Address: srv.URL, Headers: map[string]string{"Kong-Admin-Token": "s3cret"},
	}}}, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(sink.Closer).Close()
	if caps := s.Describe(); !caps.Gateway {
		t.Errorf("capabilities %+v: kong-db is a gateway with entity errors", caps)
	}
	raw := harness.Fixture(t, "ingress-v1-rule-with-tls__default.yaml")
	ck, err := config.Check(raw, config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Apply(ctx, config.New("default", 1, config.Hash(raw), ck.Format, raw, ck.JSON, nil, time.Unix(0, 0))); err != nil {
		t.Fatal(err)
	}
	if len(api.Entities("", "certificates")) == 0 || len(api.Entities("", "routes")) == 0 {
		t.Error("certificates or routes not synced")
	}
	mu.Lock()
	defer mu.Unlock()
	if missing != 0 {
		t.Errorf("%d requests without the Kong-Admin-Token header", missing)
	}
}
