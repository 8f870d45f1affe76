package hybrid_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/test/kongemu/dataplane"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) ca {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster CA"}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return ca{c, key, pool}
}

// leaf is a certificate issued directly by the CA (a data plane's default
// lua_ssl_verify_depth).
func (c ca) leaf(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestPKIMode(t *testing.T) {
	authority := newCA(t)
	h := startHub(t, hybrid.Options{Mode: hybrid.ModePKI, ClientCAs: authority.pool, Cert: authority.leaf(t, "localhost")})
	cfg := h.push("default", svc)
	good := h.dp(dataplane.Options{NodeID: "dp-pki", PKI: true, RootCAs: authority.pool, ServerName: "localhost", Cert: authority.leaf(t, "dp-pki")})
	if err := good.WaitHash(ctx(t), hybrid.ConfigHash(cfg)); err != nil {
		t.Fatal(err)
	}
	h.status("dp-pki", applied(cfg))
	other := newCA(t).leaf(t, "dp-other")
	if _, _, err := h.dial("node_id=dp-other&node_version=3.9.0", &other); err == nil {
		t.Fatal("a certificate of another CA connected")
	}
}
