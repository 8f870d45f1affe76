package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

func selfSigned(t *testing.T, cn string) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}

func TestBuildNilIsDefault(t *testing.T) {
	c, err := Build(nil)
	if err != nil || c != nil {
		t.Fatalf("Build(nil) = %v, %v; want nil, nil", c, err)
	}
}

func TestPEMTakesPrecedenceOverFile(t *testing.T) {
	inlineCert, inlineKey := selfSigned(t, "inline")
	fileCert, fileKey := selfSigned(t, "file")
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := &confighubv1.TLS{
		CertPem: inlineCert, KeyPem: inlineKey,
		CertFile: write("c.pem", fileCert), KeyFile: write("k.pem", fileKey),
		CaFile: write("ca.pem", fileCert), ServerName: "kong.test",
	}
	c, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != "inline" {
		t.Fatalf("client certificate CN = %q, want the inline one", leaf.Subject.CommonName)
	}
	if c.RootCAs == nil || c.ServerName != "kong.test" {
		t.Fatalf("CA pool or server name not set: %+v", c)
	}

	// Files alone work too.
	c, err = Build(&confighubv1.TLS{CertFile: spec.CertFile, KeyFile: spec.KeyFile})
	if err != nil || len(c.Certificates) != 1 {
		t.Fatalf("file certificate: %v, %v", c, err)
	}
}

func TestHalfACertificateIsAnError(t *testing.T) {
	cert, key := selfSigned(t, "x")
	for _, tc := range []struct {
		spec *confighubv1.TLS
		want string
	}{
		{&confighubv1.TLS{CertPem: cert}, "no key"},
		{&confighubv1.TLS{KeyPem: key}, "no client certificate"},
		{&confighubv1.TLS{CertFile: "/nonexistent/c.pem", KeyPem: key}, "reading cert file"},
		{&confighubv1.TLS{CaPem: "not pem"}, "no PEM certificate"},
	} {
		_, err := Build(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%v) error = %v, want it to mention %q", tc.spec, err, tc.want)
		}
	}
}

// TestCustomCAAndMinimumVersion: a custom CA is the only root of the
// connection, and no spec allows below TLS 1.2 or skips verification
// unless insecure_skip_verify is set.
func TestCustomCAAndMinimumVersion(t *testing.T) {
	ca, _ := selfSigned(t, "ca")
	c, err := Build(&confighubv1.TLS{CaPem: ca})
	if err != nil {
		t.Fatal(err)
	}
	want := x509.NewCertPool()
	want.AppendCertsFromPEM([]byte(ca))
	if c.RootCAs == nil || !c.RootCAs.Equal(want) {
		t.Fatal("RootCAs is not exactly the custom CA")
	}
	if c.MinVersion != tls.VersionTLS12 || c.InsecureSkipVerify {
		t.Fatalf("MinVersion %x, InsecureSkipVerify %v; want TLS 1.2 and false", c.MinVersion, c.InsecureSkipVerify)
	}
	if c, err := Build(&confighubv1.TLS{InsecureSkipVerify: true}); err != nil || !c.InsecureSkipVerify || c.MinVersion != tls.VersionTLS12 {
		t.Fatalf("insecure_skip_verify: %+v, %v", c, err)
	}
}

// TestWarnInsecureOnlyWhenSet: turning verification off is logged as a
// warning, and nothing is logged otherwise.
func TestWarnInsecureOnlyWhenSet(t *testing.T) {
	var out strings.Builder
	logger := slog.New(slog.NewTextHandler(&out, nil))
	WarnInsecure(logger, &confighubv1.TLS{ServerName: "x"}, "https://kong:8444")
	WarnInsecure(logger, nil, "https://kong:8444")
	if out.Len() != 0 {
		t.Fatalf("logged without insecure_skip_verify: %s", out.String())
	}
	WarnInsecure(logger, &confighubv1.TLS{InsecureSkipVerify: true}, "https://kong:8444")
	if got := out.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "address=https://kong:8444") {
		t.Fatalf("warning = %q", got)
	}
}
