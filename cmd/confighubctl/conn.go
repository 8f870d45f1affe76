package main

import (
	"context"
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

// maxRecv bounds answers (config get of a large configuration).
const maxRecv = 512 << 20

// reconnectBackoff is grpc's default but for its longest wait.
var reconnectBackoff = backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxReconnectWait}

// maxReconnectWait bounds the wait between two connection attempts, and
// between two watch retries: a watch follows the hub within about twice
// this after the hub came back.
const maxReconnectWait = 5 * time.Second

// dial connects to the hub as the globals say.
func dial(g *globals, opts ...hubclient.Option) (*hubclient.Client, func(), error) {
	cc, err := dialConn(g)
	if err != nil {
		return nil, nil, err
	}
	return hubclient.New(cc, opts...), func() { _ = cc.Close() }, nil
}

// dialConn is dial's connection, for a command that needs more than one
// client on it (push retries with other upload settings).
func dialConn(g *globals) (*grpc.ClientConn, error) {
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
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)),
		// grpc's reconnects back off up to 2 minutes by default: after a
		// long outage status --watch would go on failing that long with the
		// hub back. A single operator's client can afford to try sooner.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: 20 * time.Second}),
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
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", g.tlsCA)
		}
		c.RootCAs = pool
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

// listCall is the common body of a command that reads one answer: it takes
// no positional argument, checks --output, dials the hub and runs call
// within --timeout. Errors of call are the command's (cliError).
func listCall[T any](ctx context.Context, g *globals, name string, pos []string, call func(context.Context, *hubclient.Client) (T, error)) (T, error) {
	var zero T
	if len(pos) > 0 {
		return zero, usagef("%s: unexpected argument %q", name, pos[0])
	}
	if err := checkOutput(g); err != nil {
		return zero, err
	}
	c, closeConn, err := dial(g)
	if err != nil {
		return zero, err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	res, err := call(ctx, c)
	if err != nil {
		return zero, &cliError{name, err}
	}
	return res, nil
}
