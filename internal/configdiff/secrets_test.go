package configdiff

import (
	"strings"
	"testing"
)

// secretConfig holds a secret of every kind redact knows, each value
// containing marker.
func secretConfig(marker string) []byte {
	return []byte(strings.ReplaceAll(`{"_format_version":"3.0",
"consumers":[{"username":"alice","id":"c1",
  "keyauth_credentials":[{"key":"@S@key"}],
  "basicauth_credentials":[{"username":"alice-basic","password":"@S@password"}],
  "hmacauth_credentials":[{"username":"alice-hmac","secret":"@S@hmac"}],
  "jwt_secrets":[{"key":"issuer","secret":"@S@jwt"}],
  "oauth2_credentials":[{"name":"app","client_id":"app-id","client_secret":"@S@oauth"}]}],
"certificates":[{"id":"cert1","cert":"PEM-CERT","key":"@S@certkey","key_alt":"@S@keyalt"}],
"keys":[{"name":"k1","kid":"k1","jwk":"@S@jwk","pem":{"public_key":"PUB","private_key":"@S@pem"}}],
"services":[{"name":"s","host":"h","client_certificate":{"cert":"PEM-CERT","key":"@S@svckey"}}],
"upstreams":[{"name":"u","client_certificate":{"cert":"PEM-CERT","key":"@S@upkey"}}]}`, "@S@", marker))
}

func TestNoSecretInTheDiff(t *testing.T) {
	empty := []byte(`{"_format_version":"3.0"}`)
	a, b := secretConfig("SECRETA-"), secretConfig("SECRETB-")
	for _, tc := range []struct {
		name     string
		from, to []byte
		// changes is how many entities change: every secret in b
		// differs from a's; a key-auth key is the credential's identity,
		// so a new key is a delete and a create.
		changes int
	}{
		{"created", empty, b, 10},
		{"deleted", a, empty, 10},
		{"updated", a, b, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Configs(tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Changes) != tc.changes {
				t.Fatalf("%d changes, want %d: %s", len(d.Changes), tc.changes, mustJSON(t, d.Changes))
			}
			out, err := marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, c := range d.Changes {
				text.WriteString(c.Entity.String() + "\n")
			}
			for _, s := range []string{string(out), text.String()} {
				if strings.Contains(s, "SECRET") {
					t.Fatalf("a secret in the diff:\n%s", s)
				}
			}
			if tc.name == "updated" && !strings.Contains(string(out), `"path":["password"],"old":"<redacted>","new":"<redacted>"`) {
				t.Fatalf("a changed password is not shown as a redacted change:\n%s", out)
			}
			if tc.name == "created" && !strings.Contains(string(out), `"pem":{"private_key":"<redacted>","public_key":"PUB"}`) {
				t.Fatalf("a created key does not show its public key beside the redacted private key:\n%s", out)
			}
		})
	}
}
