package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/confighub/confighub/api/hubclient"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	addr := fs.String("hub", "127.0.0.1:7070", "hub address")
	dir := fs.String("dir", ".", "folder of Kong configurations (*.yaml, *.yml, *.json), one per stream")
	every := fs.Duration("interval", 2*time.Second, "how often the folder is read")
	wait := fs.Duration("wait", time.Minute, "how long a push waits for every sink")
	token := fs.String("token", os.Getenv("CONFIGHUB_TOKEN"), "bearer token with the push role (env CONFIGHUB_TOKEN)")
	ca := fs.String("tls-ca", "", "CA file: connect with TLS, checking the hub's certificate against it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	creds := insecure.NewCredentials()
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s: no PEM certificate in it", *ca)
		}
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool})
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if *token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(hubclient.BearerToken(*token)))
	}
	cc, err := grpc.NewClient(*addr, opts...)
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := &Folder{Dir: *dir, Ctl: &Controller{Hub: hubclient.New(cc), Out: os.Stdout}, Wait: *wait}
	return f.Run(ctx, clockwork.NewRealClock(), *every)
}
