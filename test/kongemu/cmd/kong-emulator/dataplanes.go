package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/confighub/confighub/test/kongemu/dataplane"
)

// dpFlags start emulated Kong data planes in hybrid mode instead of Admin
// APIs (--cluster-control-plane set).
type dpFlags struct {
	controlPlane, cert, key, mtls, ca, serverName, version, labels, prefix string
	pingInterval, reconnectMin, reconnectMax                               time.Duration
	konnect                                                                bool
}

func addDPFlags(fs *flag.FlagSet, d *dpFlags) {
	fs.StringVar(&d.controlPlane, "cluster-control-plane", "", "start --count emulated data planes in hybrid mode dialling this hub cluster listener (host:port) instead of Admin APIs")
	fs.StringVar(&d.cert, "cluster-cert", "", "data plane certificate file (PEM; shared mode: the cluster certificate)")
	fs.StringVar(&d.key, "cluster-cert-key", "", "key file of --cluster-cert")
	fs.StringVar(&d.mtls, "cluster-mtls", "shared", "shared or pki")
	fs.StringVar(&d.ca, "cluster-ca-cert", "", "CA file that signs the hub's certificate (pki)")
	fs.StringVar(&d.serverName, "cluster-server-name", "", "name checked in the hub's certificate (pki; default the host of --cluster-control-plane)")
	fs.StringVar(&d.version, "dp-version", "3.9.1", "Kong version the data planes report")
	fs.StringVar(&d.labels, "cluster-dp-labels", "", "labels, k:v,k:v (stream:NAME picks the hub stream)")
	fs.StringVar(&d.prefix, "dp-node-prefix", "emu-dp-", "node_id prefix; data plane i is PREFIX<i>")
	fs.DurationVar(&d.pingInterval, "dp-ping-interval", dataplane.DefaultPingInterval, "how often each data plane pings")
	fs.DurationVar(&d.reconnectMin, "dp-reconnect-min", 5*time.Second, "least wait before dialling again")
	fs.DurationVar(&d.reconnectMax, "dp-reconnect-max", 10*time.Second, "longest wait before dialling again")
	fs.BoolVar(&d.konnect, "dp-konnect-mode", false, "report a configuration that fails in an error frame, as a Konnect data plane does")
}

// runDataPlanes runs n emulated data planes until ctx ends, printing each
// node_id.
func runDataPlanes(ctx context.Context, d dpFlags, n int, stdout io.Writer, log *slog.Logger) error {
	if d.cert == "" || d.key == "" {
		return errors.New("--cluster-control-plane needs --cluster-cert and --cluster-cert-key")
	}
	pair, err := tls.LoadX509KeyPair(d.cert, d.key)
	if err != nil {
		return fmt.Errorf("--cluster-cert: %w", err)
	}
	o := dataplane.Options{Addr: d.controlPlane, Cert: pair, Version: d.version, PingInterval: d.pingInterval,
		ReconnectMin: d.reconnectMin, ReconnectMax: d.reconnectMax, KonnectMode: d.konnect, Shared: dataplane.NewShared(), Logger: log}
	switch d.mtls {
	case "shared":
	case "pki":
		pem, err := os.ReadFile(d.ca)
		if err != nil {
			return fmt.Errorf("--cluster-ca-cert: %w", err)
		}
		o.PKI, o.RootCAs, o.ServerName = true, x509.NewCertPool(), d.serverName
		if !o.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--cluster-ca-cert %s: no PEM certificate", d.ca)
		}
	default:
		return fmt.Errorf("--cluster-mtls %q: want shared or pki", d.mtls)
	}
	if d.labels != "" {
		o.Labels = map[string]string{}
		for _, kv := range strings.Split(d.labels, ",") {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				return fmt.Errorf("--cluster-dp-labels %q: want k:v pairs", d.labels)
			}
			o.Labels[k] = v
		}
	}
	dps := make([]*dataplane.DP, 0, n)
	defer func() {
		for _, dp := range dps {
			dp.Stop()
		}
	}()
	for i := 0; i < n; i++ {
		oi := o
		oi.NodeID = fmt.Sprintf("%s%d", d.prefix, i)
		dps = append(dps, dataplane.Start(oi))
		fmt.Fprintln(stdout, oi.NodeID)
	}
	log.Info("kong-emulator data planes started (an emulator, not Kong)", "data_planes", n, "control_plane", d.controlPlane)
	<-ctx.Done()
	return nil
}
