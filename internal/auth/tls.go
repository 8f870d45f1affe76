package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// ServerTLS holds the hub's reloadable certificate and the client CA for mTLS.
type ServerTLS struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
	clientCAs         *x509.CertPool
}

// NewServerTLS loads the certificate and key and, if set, the CA every client certificate must chain to (mTLS).
func NewServerTLS(certFile, keyFile, clientCAFile string) (*ServerTLS, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	s := &ServerTLS{certFile: certFile, keyFile: keyFile}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", clientCAFile)
		}
		s.clientCAs = pool
	}
	return s, nil
}

// Reload reads the certificate and key again; on error the old pair stays.
func (s *ServerTLS) Reload() error {
	c, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return fmt.Errorf("load --tls-cert %s / --tls-key %s: %w", s.certFile, s.keyFile, err)
	}
	s.cert.Store(&c)
	return nil
}

// MTLS reports whether client certificates are required.
func (s *ServerTLS) MTLS() bool { return s.clientCAs != nil }

// Config is the server's *tls.Config (TLS 1.2 or later).
func (s *ServerTLS) Config() *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cert.Load(), nil
		},
	}
	if s.clientCAs != nil {
		c.ClientCAs = s.clientCAs
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}
