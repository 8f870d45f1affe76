package redact_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/redact"
)

// TestEntity: Entity redacts one decoded entity as Config redacts it in a
// configuration, and leaves its input alone.
func TestEntity(t *testing.T) {
	entities := map[string]map[string]string{
		// collection -> entity type -> entity
		"keyauth_credentials":   {"keyauth_credential": `{"key":"k1","id":"x"}`},
		"basicauth_credentials": {"basicauth_credential": `{"username":"u","password":"p1"}`},
		"hmacauth_credentials":  {"hmacauth_credential": `{"username":"u","secret":"s1"}`},
		"jwt_secrets":           {"jwt_secret": `{"key":"iss","secret":"s2","rsa_public_key":"pub"}`},
		"oauth2_credentials":    {"oauth2_credential": `{"client_id":"c","client_secret":"s3"}`},
		"certificates":          {"certificate": `{"cert":"C","key":"K","key_alt":"","tags":["a"]}`},
		"keys":                  {"key": `{"kid":"k","jwk":"J","pem":{"public_key":"P","private_key":"S"}}`},
		"services":              {"service": `{"name":"s","client_certificate":{"cert":"C","key":"K"},"tags":["uniqueness violation: 'keyauth_credentials' entity with key set to 'k9' already declared"]}`},
		"upstreams":             {"upstream": `{"name":"u","client_certificate":{"key":null}}`},
		"routes":                {"route": `{"name":"r","key":"not-a-secret"}`},
	}
	for coll, byType := range entities {
		for typ, text := range byType {
			whole := []byte(`{"` + coll + `":[` + text + `]}`)
			red, _, err := redact.Config(whole, config.FormatJSON)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string][]map[string]any
			if err := json.Unmarshal(red, &want); err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(text), &obj); err != nil {
				t.Fatal(err)
			}
			got := redact.Entity(typ, obj)
			if !reflect.DeepEqual(got, want[coll][0]) {
				t.Errorf("%s: Entity gives %v, Config %v", typ, got, want[coll][0])
			}
			again, _ := json.Marshal(obj)
			var orig map[string]any
			_ = json.Unmarshal([]byte(text), &orig)
			if b, _ := json.Marshal(orig); !bytes.Equal(again, b) {
				t.Errorf("%s: Entity changed its input: %s", typ, again)
			}
		}
	}
}
