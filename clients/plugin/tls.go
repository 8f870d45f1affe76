package plugin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// tlsConfig builds the client TLS settings of a plugin connection. PEM
// fields take precedence over files. Files are read here, at sink creation,
// so a bad path is a spec error the operator sees on PutSink.
func tlsConfig(t *confighubv1.TLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.GetServerName(), InsecureSkipVerify: t.GetInsecureSkipVerify()}
	ca := []byte(t.GetCaPem())
	if len(ca) == 0 && t.GetCaFile() != "" {
		b, err := os.ReadFile(t.GetCaFile())
		if err != nil {
			return nil, fmt.Errorf("read tls.ca_file: %w", err)
		}
		ca = b
	}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("tls CA holds no PEM certificate")
		}
		c.RootCAs = pool
	}
	cert, key := []byte(t.GetCertPem()), []byte(t.GetKeyPem())
	if len(cert) == 0 && t.GetCertFile() != "" {
		b, err := os.ReadFile(t.GetCertFile())
		if err != nil {
			return nil, fmt.Errorf("read tls.cert_file: %w", err)
		}
		cert = b
	}
	if len(key) == 0 && t.GetKeyFile() != "" {
		b, err := os.ReadFile(t.GetKeyFile())
		if err != nil {
			return nil, fmt.Errorf("read tls.key_file: %w", err)
		}
		key = b
	}
	switch {
	case len(cert) > 0 && len(key) > 0:
		kp, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{kp}
	case len(cert) > 0 || len(key) > 0:
		return nil, errors.New("tls needs both a client certificate and its key")
	}
	return c, nil
}
