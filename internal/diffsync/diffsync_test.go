package diffsync

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kong/go-kong/kong"
	"go.uber.org/goleak"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/sink"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	api *kongemu.EntityAPI
	url string
}

func newEnv(t testing.TB, opts ...kongemu.EntityOption) *env {
	t.Helper()
	api := kongemu.NewEntityAPI(opts...)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &env{api: api, url: srv.URL}
}

func (e *env) syncer(t testing.TB, base string, o Options) *Syncer {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := kong.NewClient(kong.String(base), &http.Client{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if o.TempDir == "" {
		o.TempDir = t.TempDir()
	}
	return New(c, o)
}

func loadConfig(t testing.TB, raw []byte, gen uint64) *config.Config {
	t.Helper()
	ck, err := config.Check(raw, config.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	return config.New("default", gen, config.Hash(raw), ck.Format, raw, ck.JSON, nil, time.Unix(0, 0))
}

func fixture(t testing.TB, name string) []byte { return harness.Fixture(t, name) }

// enterprise reports fixtures that use Enterprise entities (out of scope
// of a Kong OSS destination).
func enterprise(name string) bool {
	return strings.Contains(strings.SplitN(name, "__", 2)[0], "-ee")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCredentialsWithoutSecretsArePermanent: the reconciler's reader
// rejects HMAC and JWT credentials without a secret before any request.
func TestCredentialsWithoutSecretsArePermanent(t *testing.T) {
	e := newEnv(t)
	s := e.syncer(t, e.url, Options{})
	_, err := s.Sync(ctxT(t), loadConfig(t, fixture(t, "credentials__default.yaml"), 1))
	se, ok := sink.AsError(err)
	if !ok || !se.Permanent || se.Code != "invalid" {
		t.Fatalf("error = %#v, want a permanent invalid *sink.Error", err)
	}
	if !strings.Contains(se.Message, "validation error") || !strings.Contains(se.Message, "secret") {
		t.Errorf("message %q does not carry the reconciler's validation error about the secret", se.Message)
	}
	if strings.Contains(se.Message, "confighub-diffsync") {
		t.Errorf("message %q leaks the temporary file name", se.Message)
	}
	if n := len(e.api.Counts()); n != 0 {
		t.Errorf("a rejected configuration sent requests: %v", e.api.Counts())
	}
	// Each rejected credential is named with its k8s tags and field.
	got := map[string]string{}
	for _, ee := range se.EntityErrors {
		for _, tag := range ee.EntityTags {
			if strings.HasPrefix(tag, "k8s-name:") && len(ee.Errors) == 1 {
				got[ee.EntityType+"/"+tag] = ee.Errors[0].Field
			}
		}
	}
	want := map[string]string{
		"hmacauth_credentials/k8s-name:consumer-hmac-auth": "secret",
		"jwt_secrets/k8s-name:consumer-jwt":                "secret",
	}
	if len(got) != len(want) || got["hmacauth_credentials/k8s-name:consumer-hmac-auth"] != "secret" ||
		got["jwt_secrets/k8s-name:consumer-jwt"] != "secret" {
		t.Errorf("entity errors %v, want %v", got, want)
	}
}

// TestFixtureSequenceConverges: syncing every fixture (no Enterprise
// entity) in turn onto one destination, DB mode and a Konnect control
// plane, leaves exactly that fixture's entities each time (creates,
// updates, deletes in the reconciler's order, including entities whose
// name moves to a new id). In DB mode each fixture is then synced again:
// a configuration the destination already holds sends no write.
func TestFixtureSequenceConverges(t *testing.T) {
	for _, konnect := range []bool{false, true} {
		name := "kong-db"
		if konnect {
			name = "konnect"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The expression-routes fixtures need a Kong whose router
			// flavor is "expressions" (Konnect always has the fields).
			e := newEnv(t, kongemu.WithExpressionsRouter())
			base, cp, opts := e.url, "", Options{}
			if konnect {
				cp = "cp-seq"
				base, opts = e.url+kongemu.KonnectPrefix+cp, Options{ControlPlane: cp}
			}
			s := e.syncer(t, base, opts)
			var gen uint64
			for _, p := range harness.Fixtures(t) {
				name := filepath.Base(p)
				if enterprise(name) || name == "credentials__default.yaml" {
					continue
				}
				gen++
				cfg := loadConfig(t, fixture(t, name), gen)
				if _, err := s.Sync(ctxT(t), cfg); err != nil {
					t.Fatalf("after %s: %v", name, err)
				}
				js, _ := cfg.JSON()
				assertMirrors(t, e.api, cp, js)
				if t.Failed() {
					t.Fatalf("destination does not mirror %s", name)
				}
				if konnect {
					continue
				}
				e.api.ResetCounts()
				res, err := s.Sync(ctxT(t), cfg)
				if err != nil {
					t.Fatalf("second sync of %s: %v", name, err)
				}
				if w := e.api.Writes(); len(w) != 0 || res != (Result{}) {
					t.Fatalf("second sync of %s wrote %v (%+v)", name, w, res)
				}
			}
		})
	}
}

// TestHungDestinationTimesOut: a destination that never answers costs one
// attempt bounded by its context, reported as a retryable timeout.
func TestHungDestinationTimesOut(t *testing.T) {
	e := newEnv(t)
	release := e.api.Hang()
	defer release()
	s := e.syncer(t, e.url+kongemu.KonnectPrefix+"cp", Options{ControlPlane: "cp"})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Sync(ctx, loadConfig(t, fixture(t, "httproute-example__default.yaml"), 1))
	se, ok := sink.AsError(err)
	if !ok || se.Permanent || se.Code != "timeout" {
		t.Fatalf("error %#v, want a retryable timeout", err)
	}
}

// TestBehindGateway: the entity API behind the DB-less emulator's Gateway
// (WithRoutes) serves a DB-mode sync; the gateway answers GET /.
func TestBehindGateway(t *testing.T) {
	api := kongemu.NewEntityAPI()
	gw := kongemu.New(kongemu.WithDBMode(), kongemu.WithRoutes(api.Routes))
	url, err := gw.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	e := &env{api: api, url: url}
	cfg := loadConfig(t, fixture(t, "ingress-v1-rule-with-tls-and-consumer__default.yaml"), 1)
	if _, err := e.syncer(t, url, Options{}).Sync(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	js, _ := cfg.JSON()
	assertMirrors(t, api, "", js)
	if gw.Count("GET", "/") == 0 {
		t.Error("the gateway did not answer GET /")
	}
}
