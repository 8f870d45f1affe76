package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/confighub/confighub/api/hubclient"
)

const (
	maxRecv          = 512 << 20       // bounds answers (config get of a large configuration)
	maxReconnectWait = 5 * time.Second // between connection attempts and watch retries
)

func dial(g *globals) (*grpc.ClientConn, error) {
	useTLS := g.tlsCA != "" || g.tlsCert != "" || g.tlsKey != "" || g.tlsServerName != ""
	if useTLS && g.insecure {
		return nil, usagef("--insecure and --tls-* flags exclude each other")
	}
	creds := insecure.NewCredentials()
	if useTLS {
		c, err := clientTLS(g)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(c)
	}
	retry := backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxReconnectWait}
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: retry, MinConnectTimeout: 20 * time.Second}),
	}
	if g.token != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(hubclient.BearerToken(g.token)))
	}
	cc, err := grpc.NewClient(g.addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", g.addr, err)
	}
	return cc, nil
}

func clientTLS(g *globals) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: g.tlsServerName}
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(g.addr); err == nil {
			c.ServerName = host
		}
	}
	if g.tlsCA != "" {
		pem, err := os.ReadFile(g.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", g.tlsCA)
		}
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	if g.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
