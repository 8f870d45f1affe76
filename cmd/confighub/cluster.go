package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/sink"
)

// clusterFlags configure the cluster listener Kong data planes dial in
// hybrid mode (kong.conf's names).
type clusterFlags struct {
	listen, cert, key, mtls, ca, kongVersion string
	maxPayload                               int
	pingTimeout, applyBound, purgeDelay      time.Duration
}

func addClusterFlags(fs *flag.FlagSet, c *clusterFlags) {
	fs.StringVar(&c.listen, "cluster-listen", "", "address of the cluster listener Kong data planes in hybrid mode connect to (Kong's port is 8005; off when empty); TLS only, /v1/outlet")
	fs.StringVar(&c.cert, "cluster-cert", "", "cluster certificate file (PEM): in shared mode the one every data plane presents too")
	fs.StringVar(&c.key, "cluster-cert-key", "", "key file of --cluster-cert (PEM)")
	fs.StringVar(&c.mtls, "cluster-mtls", string(hybrid.ModeShared), "how data planes' client certificates are checked: shared (it is --cluster-cert) or pki (signed by --cluster-ca-cert)")
	fs.StringVar(&c.ca, "cluster-ca-cert", "", "CA certificate file (PEM) that signs data planes' certificates (--cluster-mtls pki)")
	fs.IntVar(&c.maxPayload, "cluster-max-payload", hybrid.DefaultMaxPayload, "largest compressed reconfigure frame sent to a data plane, and largest frame read from one (kong.conf cluster_max_payload); a larger configuration fails with too-large")
	fs.StringVar(&c.kongVersion, "cluster-kong-version", hybrid.DefaultTarget.String(), "the Kong version the configurations target: a data plane of another major version or a newer minor is refused (kong_version_incompatible)")
	fs.DurationVar(&c.pingTimeout, "cluster-ping-timeout", hybrid.DefaultPingTimeout, "a data plane silent (no ping) for this long is disconnected")
	fs.DurationVar(&c.applyBound, "cluster-apply-bound", hybrid.DefaultApplyBound, "a data plane that still pings another configuration hash this long after a generation was sent fails it (it did not load it)")
	fs.DurationVar(&c.purgeDelay, "cluster-data-plane-purge-delay", hybrid.DefaultPurgeDelay, "a disconnected data plane's sink is forgotten after this long (kong.conf cluster_data_plane_purge_delay)")
}

// clusterListener is the running cluster listener, nil when --cluster-listen is
// empty.
type clusterListener struct {
	srv  *hybrid.Server
	lis  net.Listener
	done chan error
}

// newCluster checks the flags, loads the certificates, and registers the
// kong-dp kind in reg.
func newCluster(c clusterFlags, reg *sink.Registry, log *slog.Logger) (*clusterListener, error) {
	if c.listen == "" {
		return nil, nil
	}
	if c.cert == "" || c.key == "" {
		return nil, errors.New("--cluster-listen needs --cluster-cert and --cluster-cert-key")
	}
	pair, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		return nil, fmt.Errorf("--cluster-cert %s, --cluster-cert-key %s: %w", c.cert, c.key, err)
	}
	target, err := hybrid.ParseTarget(c.kongVersion)
	if err != nil {
		return nil, fmt.Errorf("--cluster-kong-version: %w", err)
	}
	if c.maxPayload < 4<<20 {
		return nil, fmt.Errorf("--cluster-max-payload %d: at least 4194304 (4 MiB), as Kong requires", c.maxPayload)
	}
	o := hybrid.Options{Cert: pair, Mode: hybrid.Mode(c.mtls), MaxPayload: c.maxPayload, Target: target,
		PingTimeout: c.pingTimeout, ApplyBound: c.applyBound, PurgeDelay: c.purgeDelay, Logger: log}
	switch o.Mode {
	case hybrid.ModeShared:
	case hybrid.ModePKI:
		if c.ca == "" {
			return nil, errors.New("--cluster-mtls pki needs --cluster-ca-cert")
		}
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return nil, fmt.Errorf("--cluster-ca-cert: %w", err)
		}
		o.ClientCAs = x509.NewCertPool()
		if !o.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cluster-ca-cert %s: no PEM certificate in it", c.ca)
		}
	default:
		return nil, fmt.Errorf("--cluster-mtls %q: want shared or pki", c.mtls)
	}
	srv, err := hybrid.New(o)
	if err != nil {
		return nil, err
	}
	if err := srv.Register(reg); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", c.listen)
	if err != nil {
		return nil, fmt.Errorf("--cluster-listen %s: %w", c.listen, err)
	}
	return &clusterListener{srv: srv, lis: lis, done: make(chan error, 1)}, nil
}

// serve starts accepting data planes, their sinks put in sinks.
func (c *clusterListener) serve(sinks hybrid.Sinks, log *slog.Logger) {
	if c == nil {
		return
	}
	log.Info("cluster listener serving", "cluster_listen", c.lis.Addr().String())
	go func() { c.done <- c.srv.Serve(c.lis, sinks) }()
}

// close stops the listener and closes the data planes' connections (they
// keep serving their configuration and dial again).
func (c *clusterListener) close(log *slog.Logger) {
	if c == nil {
		return
	}
	c.srv.Close()
	_ = c.lis.Close()
	select {
	case err := <-c.done:
		if err != nil {
			log.Warn("cluster listener stopped", "error", err)
		}
	default:
	}
}
