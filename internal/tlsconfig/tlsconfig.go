package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
)

// Build returns the TLS settings of spec, or nil (the defaults) when spec is nil.
func Build(spec *confighubv1.TLS) (*tls.Config, error) {
	if spec == nil {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         spec.GetServerName(),
		InsecureSkipVerify: spec.GetInsecureSkipVerify(), //nolint:gosec // opt-in, documented as test-only
	}
	ca, err := pemOrFile("ca", spec.GetCaPem(), spec.GetCaFile())
	if err != nil {
		return nil, err
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("tls: ca holds no PEM certificate")
		}
		c.RootCAs = pool
	}
	if c.Certificates, err = clientCertificates(spec); err != nil {
		return nil, err
	}
	return c, nil
}

// clientCertificates returns the client certificate of spec, or nil when it sets none.
func clientCertificates(spec *confighubv1.TLS) ([]tls.Certificate, error) {
	certPEM, err := pemOrFile("cert", spec.GetCertPem(), spec.GetCertFile())
	if err != nil {
		return nil, err
	}
	keyPEM, err := pemOrFile("key", spec.GetKeyPem(), spec.GetKeyFile())
	if err != nil {
		return nil, err
	}
	switch {
	case certPEM == nil && keyPEM == nil:
		return nil, nil
	case certPEM == nil:
		return nil, errors.New("tls: a client key is set but no client certificate (cert_pem or cert_file)")
	case keyPEM == nil:
		return nil, errors.New("tls: a client certificate is set but no key (key_pem or key_file)")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls: client certificate: %w", err)
	}
	return []tls.Certificate{cert}, nil
}

func pemOrFile(what, pem, file string) ([]byte, error) {
	if pem != "" {
		return []byte(pem), nil
	}
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: reading %s file: %w", what, err)
	}
	return b, nil
}

// WarnInsecure warns when spec turns off the server's verification (a nil logger logs nothing).
func WarnInsecure(logger *slog.Logger, spec *confighubv1.TLS, address string) {
	if logger == nil || !spec.GetInsecureSkipVerify() {
		return
	}
	logger.Warn("TLS verification of the server is disabled (insecure_skip_verify); use only for tests", "address", address)
}
