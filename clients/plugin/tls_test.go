package plugin_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/plugin"
	"github.com/confighub/confighub/sink"
)

// selfSigned returns a server certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "plugin"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestApplyOverTLS(t *testing.T) {
	cert, caPEM := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	p := &fakePlugin{}
	sinkv1.RegisterSinkPluginServiceServer(srv, p)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	defer func() { srv.Stop(); <-done }()

	r := sink.NewRegistry()
	if err := plugin.Register(r); err != nil {
		t.Fatal(err)
	}
	k, _ := r.Lookup("plugin")
	spec := &confighubv1.Sink{Name: "tls", Spec: &confighubv1.Sink_Plugin{Plugin: &confighubv1.PluginSpec{
		Address: ln.Addr().String(), Tls: &confighubv1.TLS{CaPem: string(caPEM)}}}}
	s, err := k.Factory(spec, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(sink.Closer).Close()
	if err := s.Apply(ctxT(t), mkConfig(t, 1, bigConfig(100))); err != nil {
		t.Fatal(err)
	}
	if len(p.received()) != 1 {
		t.Fatal("plugin got nothing over TLS")
	}

	// Without the CA the server is not trusted: a retryable error, no apply.
	spec.GetPlugin().Tls = &confighubv1.TLS{}
	s2, err := k.Factory(spec, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.(sink.Closer).Close()
	e, ok := sink.AsError(s2.Apply(ctxT(t), mkConfig(t, 2, bigConfig(100))))
	if !ok || e.Permanent || e.Code != "unavailable" {
		t.Fatalf("untrusted server: want retryable unavailable, got %v", e)
	}
	if len(p.received()) != 1 {
		t.Fatal("an untrusted connection must not deliver")
	}
}
