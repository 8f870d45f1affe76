package redact_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/internal/redact"
)

// secretSpecs hold every kind of secret a sink spec can carry; each secret
// value contains "s3cr3t".
func secretSpecs(t *testing.T) []*confighubv1.Sink {
	t.Helper()
	settings, err := structpb.NewStruct(map[string]any{
		"url":          "https://hooks.example.com/x",
		"api_token":    "s3cr3t-plugin-token",
		"retries":      3,
		"clientSecret": "s3cr3t-client",
		"login":        map[string]any{"user": "u", "password": "s3cr3t-nested"},
		"targets":      []any{map[string]any{"name": "a", "privateKey": "s3cr3t-in-list"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	custom, err := structpb.NewStruct(map[string]any{"password": "s3cr3t-custom", "size": 1})
	if err != nil {
		t.Fatal(err)
	}
	tls := &confighubv1.TLS{CertPem: "CERT", KeyPem: "s3cr3t-key-pem", CaPem: "CA"}
	return []*confighubv1.Sink{
		{Name: "gw", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{
			Address: "http://127.0.0.1:8001", Tls: tls,
			Headers: map[string]string{"Kong-Admin-Token": "s3cr3t-admin", "X-Other": "s3cr3t-other"},
		}}},
		{Name: "db", Spec: &confighubv1.Sink_KongDb{KongDb: &confighubv1.KongDBSpec{
			Address: "http://127.0.0.1:8001", Headers: map[string]string{"Kong-Admin-Token": "s3cr3t-db"},
		}}},
		{Name: "kn", Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{
			ControlPlaneId: "cp", Token: "kpat_s3cr3t", Tls: tls,
		}}},
		{Name: "pl", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{Address: "127.0.0.1:9", Settings: settings, Tls: tls}}},
		{Name: "cu", Kind: "custom", Spec: &confighubv1.Sink_Custom{Custom: custom}},
	}
}

func TestSinkSecretsRedactEverySecret(t *testing.T) {
	r := redact.NewSinkSecrets([]byte("k"))
	for _, s := range secretSpecs(t) {
		before := proto.Clone(s)
		red := r.Redact(s)
		js := protojson.Format(red)
		if strings.Contains(js, "s3cr3t") {
			t.Errorf("%s: a secret shows: %s", s.GetName(), js)
		}
		if !strings.Contains(js, "<redacted:") {
			t.Errorf("%s: no placeholder: %s", s.GetName(), js)
		}
		if !proto.Equal(before, s) {
			t.Errorf("%s: Redact changed its input", s.GetName())
		}
	}
	// What is not secret stays.
	pl := r.Redact(secretSpecs(t)[3]).GetPlugin()
	set := pl.GetSettings().AsMap()
	login, _ := set["login"].(map[string]any)
	targets, _ := set["targets"].([]any)
	first, _ := targets[0].(map[string]any)
	if set["url"] != "https://hooks.example.com/x" || set["retries"] != 3.0 || login["user"] != "u" || first["name"] != "a" ||
		pl.GetTls().GetCertPem() != "CERT" || pl.GetTls().GetCaPem() != "CA" {
		t.Errorf("a setting that is not secret was hidden: %v %v", set, pl.GetTls())
	}
	if login["password"] == "s3cr3t-nested" || !redact.IsPlaceholder(login["password"].(string)) {
		t.Errorf("nested password: %v", login["password"])
	}
}

// TestSinkSecretsFingerprint: equal values show equal placeholders,
// different values (or keys) different ones; empty values stay empty.
func TestSinkSecretsFingerprint(t *testing.T) {
	spec := func(a, b string) *confighubv1.Sink {
		return &confighubv1.Sink{Name: "gw", Spec: &confighubv1.Sink_Kong{Kong: &confighubv1.KongSpec{Headers: map[string]string{"A": a, "B": b}}}}
	}
	h := func(r *redact.SinkSecrets, s *confighubv1.Sink) map[string]string {
		return r.Redact(s).GetKong().GetHeaders()
	}
	r := redact.NewSinkSecrets([]byte("key-1"))
	same := h(r, spec("x", "x"))
	if same["A"] != same["B"] || !redact.IsPlaceholder(same["A"]) {
		t.Fatalf("equal values: %v", same)
	}
	diff := h(r, spec("x", "y"))
	if diff["A"] == diff["B"] {
		t.Fatalf("different values, one fingerprint: %v", diff)
	}
	if other := h(redact.NewSinkSecrets([]byte("key-2")), spec("x", "x")); other["A"] == same["A"] {
		t.Fatalf("the fingerprint does not depend on the key: %v", other)
	}
	if empty := h(r, spec("", "x")); empty["A"] != "" {
		t.Fatalf("an empty value shows %q", empty["A"])
	}
}

// TestSinkSecretsRestore: a redacted spec sent back gets the stored values;
// a placeholder that matches nothing stored is ErrPlaceholder naming the
// field; a new value replaces the stored one.
func TestSinkSecretsRestore(t *testing.T) {
	r := redact.NewSinkSecrets([]byte("k"))
	for _, stored := range secretSpecs(t) {
		back, err := r.Restore(r.Redact(stored), stored)
		if err != nil {
			t.Fatalf("%s: %v", stored.GetName(), err)
		}
		if !proto.Equal(back, stored) {
			t.Fatalf("%s: restored %v\nwant %v", stored.GetName(), back, stored)
		}
		if _, err := r.Restore(r.Redact(stored), nil); !errors.Is(err, redact.ErrPlaceholder) {
			t.Fatalf("%s: nothing stored: %v", stored.GetName(), err)
		}
	}
	stored := secretSpecs(t)[0]
	in := r.Redact(stored)
	in.GetKong().Headers["X-Other"] = "new-value"
	got, err := r.Restore(in, stored)
	if err != nil || got.GetKong().GetHeaders()["X-Other"] != "new-value" || got.GetKong().GetHeaders()["Kong-Admin-Token"] != "s3cr3t-admin" {
		t.Fatalf("a changed value: %v %v", got, err)
	}
	// The placeholder of another value.
	in = r.Redact(stored)
	in.GetKong().Headers["Kong-Admin-Token"] = in.GetKong().GetHeaders()["X-Other"]
	if _, err := r.Restore(in, stored); !errors.Is(err, redact.ErrPlaceholder) || !strings.Contains(err.Error(), `kong.headers["Kong-Admin-Token"]`) {
		t.Fatalf("a placeholder of another value: %v", err)
	}
	// A placeholder from a hub with another key.
	if _, err := r.Restore(redact.NewSinkSecrets([]byte("other")).Redact(stored), stored); !errors.Is(err, redact.ErrPlaceholder) {
		t.Fatalf("a placeholder of another key: %v", err)
	}
	// The bare placeholder carries no fingerprint.
	in = proto.Clone(stored).(*confighubv1.Sink)
	in.GetKong().Headers["X-Other"] = redact.Placeholder
	if _, err := r.Restore(in, stored); !errors.Is(err, redact.ErrPlaceholder) {
		t.Fatalf("a bare placeholder: %v", err)
	}
	// A placeholder of another form (a short or upper-case fingerprint) is
	// refused too, never stored as the value.
	for _, v := range []string{"<redacted:deadbeef>", "<redacted:FA9E2315882D>", "<redacted:>", " <REDACTED:0123456789ab> "} {
		in = proto.Clone(stored).(*confighubv1.Sink)
		in.GetKong().Headers["Kong-Admin-Token"] = v
		if _, err := r.Restore(in, stored); !errors.Is(err, redact.ErrPlaceholder) || !strings.Contains(err.Error(), v) {
			t.Errorf("%s: %v, want ErrPlaceholder naming it", v, err)
		}
		if _, err := r.Restore(in, nil); !errors.Is(err, redact.ErrPlaceholder) {
			t.Errorf("%s on a new sink: %v, want ErrPlaceholder", v, err)
		}
	}
}

func TestFindPlaceholder(t *testing.T) {
	r := redact.NewSinkSecrets(nil)
	for _, s := range secretSpecs(t) {
		if p, ok := redact.FindPlaceholder(s); ok {
			t.Fatalf("%s: placeholder at %s in a spec with values", s.GetName(), p)
		}
		if _, ok := redact.FindPlaceholder(r.Redact(s)); !ok {
			t.Fatalf("%s: no placeholder found in the redacted spec", s.GetName())
		}
	}
	tok := &confighubv1.Sink{Name: "kn", Spec: &confighubv1.Sink_Konnect{Konnect: &confighubv1.KonnectSpec{Token: redact.Placeholder}}}
	if p, ok := redact.FindPlaceholder(tok); !ok || p != "konnect.token" {
		t.Fatalf("bare placeholder: %q %v", p, ok)
	}
	tok.GetKonnect().Token = "<redacted:deadbeef>"
	if p, ok := redact.FindPlaceholder(tok); !ok || p != "konnect.token" {
		t.Fatalf("a placeholder with a short fingerprint: %q %v", p, ok)
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"token": true, "api_token": true, "apiToken": true, "apitoken": true, "client_secret": true,
		"Password": true, "db-passwd": true, "api_key": true, "apiKey": true, "private_key": true,
		"credentials": true, "Authorization": true, "auth": true, "bearer": true, "signing.key": true,
		"sessionCookie": true, "tls.pem": true, "PWD": true, "x-signature": true, "keystore": false, "patch": false,
		"url": false, "retries": false, "name": false, "timeout": false, "monkey": false, "author": false,
	} {
		if got := redact.SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}
