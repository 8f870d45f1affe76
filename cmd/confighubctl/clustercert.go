package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/confighub/confighub/internal/hybrid"
)

// cmdClusterCert writes a shared-mode cluster certificate and key, the
// shape `kong hybrid gen_cert` makes (EC P-384, CN kong_clustering).
func cmdClusterCert(_ context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("cluster-cert", g, errw, "cluster-cert [--cert FILE] [--key FILE] [--days N]")
	certFile := fs.String("cert", "cluster.crt", "certificate file to write (PEM)")
	keyFile := fs.String("key", "cluster.key", "key file to write (PEM, mode 0600)")
	days := fs.Int("days", 3*365, "validity in days (kong hybrid gen_cert's default is 3 years)")
	if err := parseQuiet(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *days < 1 {
		return usagef("cluster-cert takes no arguments and --days of at least 1")
	}
	certPEM, keyPEM, err := hybrid.GenerateClusterCert(time.Now(), time.Duration(*days)*24*time.Hour)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		b    []byte
		mode os.FileMode
	}{{*keyFile, keyPEM, 0o600}, {*certFile, certPEM, 0o644}} {
		fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return fmt.Errorf("%w (an existing file is not overwritten)", err)
		}
		if _, err := fh.Write(f.b); err != nil {
			_ = fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "wrote %s and %s: the hub's --cluster-cert/--cluster-cert-key and every data plane's cluster_cert/cluster_cert_key\n", *certFile, *keyFile)
	return nil
}
