// Command webhook-plugin is an example external sink for confighub: a gRPC
// server implementing confighub.sink.v1.SinkPluginService that forwards each
// configuration to an HTTP webhook, signed with HMAC-SHA256.
//
// Usage:
//
//	webhook-plugin --listen 127.0.0.1:9000 --url https://example.com/hook \
//	    [--header 'Authorization=Bearer x']... [--hmac-secret s | --hmac-secret-file f]
//
// Every flag can also come from the environment: WEBHOOK_LISTEN, WEBHOOK_URL,
// WEBHOOK_HEADERS (k=v pairs separated by commas), WEBHOOK_HMAC_SECRET,
// WEBHOOK_HMAC_SECRET_FILE, WEBHOOK_MAX_BYTES, WEBHOOK_TIMEOUT.
//
// The webhook gets a POST of the configuration bytes with the headers
//
//	Content-Type: application/json | application/yaml
//	X-Confighub-Sink, X-Confighub-Stream, X-Confighub-Generation, X-Confighub-Hash
//	X-Confighub-Signature: sha256=<hex HMAC-SHA256 of the body>   (with a secret)
//
// and its answer is mapped for the hub: 2xx applied; 429 retry after its
// Retry-After; another 4xx a permanent rejection of this configuration;
// 5xx or no answer retried with backoff. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	sinkv1 "github.com/confighub/confighub/api/confighub/sink/v1"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	err := run(os.Args[1:], os.Getenv, log)
	if errors.Is(err, flag.ErrHelp) {
		return // the usage was printed
	}
	if err != nil {
		log.Error("webhook-plugin", "err", err)
		os.Exit(1)
	}
}

// headerFlags collects repeated --header k=v.
type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprint(map[string]string(h)) }
func (h headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("header %q: want name=value", v)
	}
	h[strings.TrimSpace(k)] = val
	return nil
}

func run(args []string, getenv func(string) string, log *slog.Logger) error {
	fs := flag.NewFlagSet("webhook-plugin", flag.ContinueOnError)
	envOr := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	headers := headerFlags{}
	if env := getenv("WEBHOOK_HEADERS"); env != "" {
		for _, kv := range strings.Split(env, ",") {
			if err := headers.Set(kv); err != nil {
				return fmt.Errorf("WEBHOOK_HEADERS: %w", err)
			}
		}
	}
	listen := fs.String("listen", envOr("WEBHOOK_LISTEN", "127.0.0.1:9000"), "host:port the gRPC server listens on")
	url := fs.String("url", envOr("WEBHOOK_URL", ""), "webhook URL that receives each configuration (required)")
	fs.Var(headers, "header", "extra request header name=value (repeatable)")
	secret := fs.String("hmac-secret", envOr("WEBHOOK_HMAC_SECRET", ""), "HMAC-SHA256 secret for X-Confighub-Signature")
	secretFile := fs.String("hmac-secret-file", envOr("WEBHOOK_HMAC_SECRET_FILE", ""), "file holding the HMAC secret (trailing newline ignored)")
	maxBytes := fs.Uint64("max-bytes", 0, "largest configuration accepted, 0 for any (env WEBHOOK_MAX_BYTES)")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of one webhook request (env WEBHOOK_TIMEOUT)")
	if v := getenv("WEBHOOK_MAX_BYTES"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("WEBHOOK_MAX_BYTES: %w", err)
		}
		*maxBytes = n
	}
	if v := getenv("WEBHOOK_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("WEBHOOK_TIMEOUT: %w", err)
		}
		*timeout = d
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("--url (or WEBHOOK_URL) is required")
	}
	key := []byte(*secret)
	if *secretFile != "" {
		if *secret != "" {
			return errors.New("give --hmac-secret or --hmac-secret-file, not both")
		}
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return fmt.Errorf("read --hmac-secret-file: %w", err)
		}
		key = []byte(strings.TrimRight(string(b), "\r\n"))
	}

	p, err := NewPlugin(Options{URL: *url, Headers: headers, Secret: key, MaxBytes: *maxBytes, Timeout: *timeout, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	srv := grpc.NewServer()
	sinkv1.RegisterSinkPluginServiceServer(srv, p)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("webhook-plugin listening", "listen", ln.Addr().String(), "url", *url, "signed", len(key) > 0)
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("webhook-plugin stopping")
	hs.Shutdown()
	srv.GracefulStop()
	return nil
}
