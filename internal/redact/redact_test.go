package redact_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/test/harness"
)

var _ server.Redactor = redact.Config

func fixture(t testing.TB, name string) []byte { return harness.Fixture(t, name) }

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, b)
	}
	return m
}

// at walks a decoded tree by keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("path %v: not a mapping at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("path %v: no index %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

// TestCredentialsFixture: the KIC credentials fixture keeps its YAML form
// and loses its basic-auth password and key-auth key, nothing else.
func TestCredentialsFixture(t *testing.T) {
	raw := fixture(t, "credentials__default.yaml")
	out, changed, err := redact.Config(raw, config.FormatYAML)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if bytes.Contains(out, []byte("consumer-1-password")) {
		t.Fatal("the basic-auth password is still there")
	}
	if config.Detect(out) != config.FormatYAML {
		t.Fatal("YAML in, not YAML out")
	}
	if _, err := config.Check(out, config.FormatYAML); err != nil {
		t.Fatalf("the redacted config is no longer a valid config: %v", err)
	}
	got, want := decode(t, out), decode(t, raw)
	c := func(m map[string]any) any { return at(t, m, "consumers", 0) }
	if at(t, c(got), "basicauth_credentials", 0, "password") != redact.Placeholder {
		t.Error("basic-auth password not redacted")
	}
	if at(t, c(got), "keyauth_credentials", 0, "key") != redact.Placeholder {
		t.Error("key-auth key not redacted")
	}
	// The JWT "key" is the issuer claim, not a secret.
	if at(t, c(got), "jwt_secrets", 0, "key") != "key" {
		t.Error("the JWT issuer key was redacted")
	}
	// Everything but the two secrets is unchanged.
	m := c(want).(map[string]any)
	at(t, m, "basicauth_credentials", 0).(map[string]any)["password"] = redact.Placeholder
	at(t, m, "keyauth_credentials", 0).(map[string]any)["key"] = redact.Placeholder
	if !reflect.DeepEqual(got, want) {
		t.Errorf("more than the secrets changed:\n%s", out)
	}
}

func TestTLSFixtureKeepsCertDropsKey(t *testing.T) {
	raw := fixture(t, "ingress-v1-rule-with-tls__default.yaml")
	out, changed, err := redact.Config(raw, config.FormatYAML)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if bytes.Contains(out, []byte("PRIVATE KEY-----")) {
		t.Fatal("a private key is still there")
	}
	got, want := decode(t, out), decode(t, raw)
	if at(t, got, "certificates", 0, "key") != redact.Placeholder {
		t.Error("certificate key not redacted")
	}
	if at(t, got, "certificates", 0, "cert") != at(t, want, "certificates", 0, "cert") {
		t.Error("the certificate itself changed")
	}
}

// TestEveryKind covers every credential kind, top-level and nested, in
// JSON: JSON stays JSON, key order and number text stay.
func TestEveryKind(t *testing.T) {
	in := `{"_format_version":"3.0","zeta":1,"alpha":12345678901234567890,"f":1.5e3,"b":true,"n":null,"s":"<&>",
"consumers":[{"username":"u","keyauth_credentials":[{"key":"k1"}],"basicauth_credentials":[{"username":"u","password":"p1"}],
"hmacauth_credentials":[{"username":"u","secret":"hm1"}],"jwt_secrets":[{"key":"iss","secret":"j1","rsa_public_key":"PUB","algorithm":"RS256"}],
"oauth2_credentials":[{"name":"app","client_id":"cid","client_secret":"o1"}]}],
"keyauth_credentials":[{"consumer":"u","key":"k2"}],"basicauth_credentials":[{"consumer":"u","password":"p2"}],
"hmacauth_credentials":[{"consumer":"u","secret":"hm2"}],"jwt_secrets":[{"consumer":"u","secret":"j2"}],"oauth2_credentials":[{"consumer":"u","client_secret":"o2"}],
"certificates":[{"cert":"CERT","key":"c1","cert_alt":"CERT2","key_alt":"c2","snis":[{"name":"a.example"}]}],
"ca_certificates":[{"cert":"CA"}],
"keys":[{"name":"k","kid":"1","jwk":"{\"d\":\"x1\"}","pem":{"private_key":"x2","public_key":"PUBKEY"}}],
"key_sets":[{"name":"ks","keys":[{"kid":"2","pem":{"private_key":"x3","public_key":"PUB3"}}]}],
"plugins":[{"name":"key-auth","config":{"key_names":["apikey"]}}]}`
	out, changed, err := redact.Config([]byte(strings.ReplaceAll(in, "\n", "")), config.FormatJSON)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	for _, secret := range []string{"k1", "p1", "hm1", "j1", "o1", "k2", "p2", "hm2", "j2", "o2", `"c1"`, `"c2"`, "x1", "x2", "x3"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("%s is still there", secret)
		}
	}
	for _, kept := range []string{`"key":"iss"`, `"rsa_public_key":"PUB"`, `"client_id":"cid"`, `"cert":"CERT"`, `"cert_alt":"CERT2"`, `"cert":"CA"`,
		`"public_key":"PUBKEY"`, `"key_names":["apikey"]`, `"alpha":12345678901234567890`, `"f":1.5e3`, `"b":true`, `"n":null`, `"s":"<&>"`} {
		if !bytes.Contains(out, []byte(kept)) {
			t.Errorf("%s was lost: %s", kept, out)
		}
	}
	if !bytes.HasPrefix(out, []byte(`{"_format_version":"3.0","zeta":1,"alpha":`)) {
		t.Errorf("key order changed: %.60s", out)
	}
	if n := bytes.Count(out, []byte(redact.Placeholder)); n != 15 {
		t.Errorf("%d values redacted, want 15: %s", n, out)
	}
}

// TestKongErrorBody: the entity of a flattened error is redacted by its
// entity_type; a non-JSON body passes unchanged.
func TestKongErrorBody(t *testing.T) {
	body := `{"code":14,"name":"invalid declarative configuration","message":"declarative config is invalid",
"flattened_errors":[{"entity_type":"basicauth_credential","entity_name":"x","entity":{"username":"u","password":"hunter2"},"errors":[{"type":"field","field":"consumer","message":"required field missing"}]},
{"entity_type":"certificate","entity":{"cert":"C","key":"PRIVATE"},"errors":[]},
{"entity_type":"route","entity":{"name":"r","key":"not-a-secret"},"errors":[]}]}`
	out, changed, err := redact.Config([]byte(body), config.FormatJSON)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if bytes.Contains(out, []byte("hunter2")) || bytes.Contains(out, []byte("PRIVATE")) {
		t.Fatalf("a secret is still in the error body: %s", out)
	}
	if !bytes.Contains(out, []byte("not-a-secret")) || !bytes.Contains(out, []byte("required field missing")) {
		t.Fatalf("the error body lost what is not secret: %s", out)
	}
	if !bytes.Contains(out, []byte("\n")) {
		t.Error("a multi-line JSON input should stay indented")
	}
	html := []byte("<html><body>413 Request Entity Too Large</body></html>")
	if out, changed, err := redact.Config(html, config.FormatJSON); err != nil || changed || !bytes.Equal(out, html) {
		t.Fatalf("a non-JSON body: %q %v %v", out, changed, err)
	}
}

// TestAllFixtures: every KIC fixture, as YAML and as JSON, stays a valid
// configuration; one without secrets comes back byte for byte.
func TestAllFixtures(t *testing.T) {
	for _, f := range harness.Fixtures(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, in := range []struct {
			b []byte
			f config.Format
		}{{raw, config.FormatYAML}, {js, config.FormatJSON}} {
			out, changed, err := redact.Config(in.b, in.f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if _, err := config.Check(out, in.f); err != nil {
				t.Fatalf("%s: the redacted config does not check: %v", f, err)
			}
			if !changed && !bytes.Equal(out, in.b) {
				t.Errorf("%s: unchanged but different bytes", f)
			}
			if in.f == config.FormatJSON && !changed {
				continue
			}
			if in.f == config.FormatJSON {
				// Same document apart from placeholders.
				var a, b any
				_ = json.Unmarshal(in.b, &a)
				_ = json.Unmarshal(out, &b)
				if n := diffCount(a, b); n == 0 || n != strings.Count(string(out), redact.Placeholder) {
					t.Errorf("%s: %d values differ, %d placeholders", f, n, strings.Count(string(out), redact.Placeholder))
				}
			}
		}
	}
}

func diffCount(a, b any) int {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return 1000
		}
		n := 0
		for k := range x {
			n += diffCount(x[k], y[k])
		}
		return n
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return 1000
		}
		n := 0
		for i := range x {
			n += diffCount(x[i], y[i])
		}
		return n
	}
	if reflect.DeepEqual(a, b) {
		return 0
	}
	return 1
}

func FuzzConfig(f *testing.F) {
	f.Add([]byte(`{"consumers":[{"keyauth_credentials":[{"key":"k"}]}]}`), true)
	f.Add([]byte("certificates:\n- key: |\n    x\n  cert: y\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, isJSON bool) {
		ff := config.FormatYAML
		if isJSON {
			ff = config.FormatJSON
		}
		out, changed, err := redact.Config(b, ff)
		if err != nil {
			return
		}
		if !changed && !bytes.Equal(out, b) {
			t.Fatal("unchanged but different bytes")
		}
		if changed && isJSON && json.Valid(b) && !json.Valid(out) {
			t.Fatalf("valid JSON in, invalid out: %s", out)
		}
	})
}

// TestDuplicateKeyInKongError: Kong names a duplicate key-auth key in full
// in its 400 body (message, fields and flattened errors); none of the
// copies survives, and the rest of the message does.
func TestDuplicateKeyInKongError(t *testing.T) {
	const msg = `uniqueness violation: 'keyauth_credentials' entity with key set to 'TopSecret123' already declared`
	body := `{"code":14,"name":"invalid declarative configuration",
"message":"declarative config is invalid: {keyauth_credentials={[2]=\"` + msg + `\"}}",
"fields":{"keyauth_credentials":[null,"` + msg + `"]},
"flattened_errors":[{"entity_type":"keyauth_credential","entity":{"key":"TopSecret123"},"errors":[{"type":"entity","message":"` + msg + `"}]}]}`
	out, changed, err := redact.Config([]byte(body), config.FormatJSON)
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if bytes.Contains(out, []byte("TopSecret123")) {
		t.Fatalf("the duplicate key is still in the error body: %s", out)
	}
	if got := bytes.Count(out, []byte("entity with key set to '<redacted>' already declared")); got != 3 {
		t.Fatalf("want the 3 messages kept with the key redacted, got %d: %s", got, out)
	}
	if got := redact.Message("x: " + msg); strings.Contains(got, "TopSecret123") || !strings.Contains(got, "uniqueness violation") {
		t.Fatalf("Message: %q", got)
	}
	other := `uniqueness violation: 'consumers' entity with username set to 'alice' already declared`
	if got := redact.Message(other); got != other {
		t.Fatalf("a non-secret unique field changed: %q", got)
	}
}

// TestInlineClientCertificate: a service or upstream may carry its client
// certificate inline; its private key goes, the certificate stays, in
// JSON and YAML.
func TestInlineClientCertificate(t *testing.T) {
	y := `_format_version: "3.0"
services:
- name: s
  url: https://example.com
  client_certificate:
    cert: PUBLIC-CERT
    key: PRIVATE-KEY-1
    key_alt: PRIVATE-KEY-2
upstreams:
- name: u
  client_certificate:
    cert: PUBLIC-CERT
    key: PRIVATE-KEY-3
`
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		raw []byte
		f   config.Format
	}{{[]byte(y), config.FormatYAML}, {j, config.FormatJSON}} {
		out, changed, err := redact.Config(c.raw, c.f)
		if err != nil || !changed {
			t.Fatalf("changed=%v err=%v", changed, err)
		}
		if bytes.Contains(out, []byte("PRIVATE-KEY")) || !bytes.Contains(out, []byte("PUBLIC-CERT")) {
			t.Fatalf("format %v: %s", c.f, out)
		}
	}
}

func TestMessageDBModeUniqueViolation(t *testing.T) {
	for in, want := range map[string]string{
		`UNIQUE violation detected on '{key="TopSecret123"}'`:                 `UNIQUE violation detected on '{key="<redacted>"}'`,
		`{"message":"UNIQUE violation detected on '{key=\"TopSecret123\"}'"}`: `{"message":"UNIQUE violation detected on '{key=\"<redacted>\"}'"}`,
		`UNIQUE violation detected on '{username="alice"}'`:                   `UNIQUE violation detected on '{username="alice"}'`,
		`UNIQUE violation detected on '{consumer="c1", password="pw"}'`:       `UNIQUE violation detected on '{consumer="c1", password="<redacted>"}'`,
	} {
		if got := redact.Message(in); got != want {
			t.Errorf("Message(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestNameIsSecret(t *testing.T) {
	for typ, want := range map[string]bool{
		"keyauth_credentials": true, "keyauth_credential": true,
		"basicauth_credentials": false, "route": false, "consumer": false, "certificate": false,
	} {
		if got := redact.NameIsSecret(typ); got != want {
			t.Errorf("NameIsSecret(%q) = %v, want %v", typ, got, want)
		}
	}
}
