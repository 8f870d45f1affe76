package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/confighub/confighub/internal/auth"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/metrics"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/statuspage"
)

const defaultMetricsListen = "127.0.0.1:9464"

type opsFlags struct {
	authTokens, tlsCert, tlsKey, tlsClientCA, metricsListen string
	insecureListenAny, includeSecrets, profiling            bool
	metricsListenSet                                        bool // given, even with the default value
}

// metricsRequired: the metrics listener must bind or the start fails.
func (o opsFlags) metricsRequired() bool { return o.metricsListenSet || o.profiling }

func addOpsFlags(fs *flag.FlagSet, o *opsFlags) {
	fs.StringVar(&o.authTokens, "auth-tokens", "", "file of bearer tokens and their roles (read, push, admin), reloaded on SIGHUP; see docs/operations.md")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate of the gRPC server (enables TLS; reloaded on SIGHUP)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.tlsClientCA, "tls-client-ca", "", "PEM CA bundle: require client certificates signed by it (mTLS)")
	fs.BoolVar(&o.insecureListenAny, "insecure-listen-any", false, "allow a non-loopback --listen or --metrics-listen without --auth-tokens (anyone who can reach the gRPC port can push and change sinks)")
	fs.StringVar(&o.metricsListen, "metrics-listen", defaultMetricsListen, "HTTP address of /metrics (Prometheus) and the live status page at / (with --auth-tokens its API needs a read token); empty disables both; if the default is in use metrics are disabled with a warning, an address given here must bind or the start fails; a non-loopback address needs --auth-tokens or --insecure-listen-any, like --listen")
	fs.BoolVar(&o.includeSecrets, "diagnostics-include-secrets", false, "GetConfig shows credentials and private keys instead of redacting them")
	fs.BoolVar(&o.profiling, "profiling", false, fmt.Sprintf("also serve Go's pprof profiles under /debug/pprof/ on --metrics-listen (needs it; with --auth-tokens every profile needs an admin token, without it they are as open as /metrics); a CPU profile or trace runs at most %d s, one at a time, and a shutdown ends it; the block and mutex profiles stay empty (their sampling rates are not set); see docs/operations.md", metrics.MaxProfileSeconds))
}

// ops is the running security and metrics wiring of one hub process.
type ops struct {
	log     *slog.Logger
	metrics *metrics.Set
	auth    *auth.Authenticator
	tls     *auth.ServerTLS
	redact  bool
	drain   *drainer
	msrv    *metrics.Server
	page    statuspage.Source      // set before serve
	pageURL atomic.Pointer[string] // "" until its listener is bound
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	hup     chan os.Signal // from startOps on, so SIGHUP never kills a starting hub
}

// startOps checks the listen policy and loads tokens, TLS and metrics; nothing listens yet.
func startOps(f flags, log *slog.Logger) (*ops, error) {
	o := &ops{log: log, redact: !f.ops.includeSecrets, drain: newDrainer(), hup: make(chan os.Signal, 1)}
	if err := checkListenPolicy(f); err != nil {
		return nil, err
	}
	var err error
	if f.ops.authTokens != "" {
		if o.auth, err = auth.NewFromFile(f.ops.authTokens, auth.WithLogger(log)); err != nil {
			return nil, fmt.Errorf("--auth-tokens: %w", err)
		}
	}
	if f.ops.tlsCert != "" || f.ops.tlsKey != "" || f.ops.tlsClientCA != "" {
		if o.tls, err = auth.NewServerTLS(f.ops.tlsCert, f.ops.tlsKey, f.ops.tlsClientCA); err != nil {
			return nil, err
		}
	}
	if f.ops.metricsListen != "" {
		if o.metrics, err = metrics.New(); err != nil {
			return nil, err
		}
	}
	if f.ops.includeSecrets {
		log.Warn("--diagnostics-include-secrets: GetConfig shows credentials and private keys to every reader")
	}
	log.Info("security", "auth", o.auth != nil, "tls", o.tls != nil, "mtls", o.tls != nil && o.tls.MTLS(),
		"redact_diagnostics", o.redact, "insecure_listen_any", f.ops.insecureListenAny)
	o.pageURL.Store(new(string))
	signal.Notify(o.hup, syscall.SIGHUP)
	return o, nil
}

// checkListenPolicy refuses a non-loopback listener without --auth-tokens or --insecure-listen-any.
func checkListenPolicy(f flags) error {
	if f.ops.authTokens != "" || f.ops.insecureListenAny {
		return nil
	}
	if err := requireLoopback("--listen", f.listen, "push configurations and change sinks"); err != nil {
		return err
	}
	if f.ops.metricsListen == "" {
		return nil
	}
	return requireLoopback("--metrics-listen", f.ops.metricsListen, "read every stream name, sink name, kind and state from /metrics, and every sink's errors from the status page")
}

// requireLoopback refuses addr (flag's value) unless it is loopback.
func requireLoopback(flag, addr, risk string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ips := []net.IP{net.ParseIP(host)} // nil for "": every interface
	if host != "" && ips[0] == nil {
		if ips, err = net.LookupIP(host); err != nil {
			return fmt.Errorf("%s %s: %w", flag, addr, err)
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s %s is not a loopback address and no --auth-tokens is set: anyone who reaches it could %s; "+
				"set --auth-tokens FILE (see docs/operations.md), or --insecure-listen-any to accept that risk", flag, addr, risk)
		}
	}
	return nil
}

func (o *ops) engineOptions() []engine.Option {
	// Secrets quoted in errors never reach status or logs, whatever --diagnostics-include-secrets says.
	opts := []engine.Option{engine.WithMessageRedactor(redact.Message), engine.WithSecretValues(redact.SecretValues)}
	if o.metrics != nil {
		opts = append(opts, engine.WithMetrics(o.metrics.Engine))
	}
	return opts
}

// serverOptions adds TLS, the drain, metrics (before auth, to count denials), auth and the redactor.
func (o *ops) serverOptions() []server.Option {
	var (
		opts   []server.Option
		unary  []grpc.UnaryServerInterceptor
		stream = []grpc.StreamServerInterceptor{o.drain.interceptor()}
	)
	if o.metrics != nil {
		unary, stream = append(unary, o.metrics.GRPC.UnaryServerInterceptor()), append(stream, o.metrics.GRPC.StreamServerInterceptor())
		opts = append(opts, server.WithRefusals(o.metrics.Bounds))
	}
	if o.auth != nil {
		unary, stream = append(unary, o.auth.UnaryInterceptor()), append(stream, o.auth.StreamInterceptor())
	}
	opts = append(opts, server.WithInterceptors(unary, stream), server.WithStatusPageURL(func() string { return *o.pageURL.Load() }))
	if o.tls != nil {
		opts = append(opts, server.WithServerOptions(grpc.Creds(credentials.NewTLS(o.tls.Config()))))
	}
	if o.redact {
		opts = append(opts, server.WithRedactor(redact.Config))
	}
	return opts
}

// pageURLFor is the URL of the listener at addr (an unspecified host: this machine's name).
func pageURLFor(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "localhost"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// serve starts /metrics with the status page and the SIGHUP reloader.
func (o *ops) serve(ctx context.Context, f flags, srv *server.Server) error {
	rctx, cancel := context.WithCancel(ctx)
	o.cancel = cancel
	if o.metrics != nil {
		o.metrics.GRPC.InitializeMetrics(srv.GRPC) // every method's series at zero
		var page http.Handler
		if o.page != nil {
			popts := []statuspage.Option{statuspage.WithLogger(o.log)}
			if o.auth != nil {
				popts = append(popts, statuspage.WithAuth(o.auth))
			}
			page = statuspage.New(rctx, o.page, popts...)
		}
		// Event streams and profiles end with rctx: Shutdown never ends a request's context.
		lopts := []metrics.ListenOption{metrics.WithBaseContext(rctx)}
		if f.ops.profiling {
			// Without tokens as open as /metrics (loopback unless --insecure-listen-any).
			lopts = append(lopts, metrics.WithProfiling(o.auth))
		}
		ms, err := o.metrics.Listen(f.ops.metricsListen, o.log, page, lopts...)
		if err != nil {
			if f.ops.metricsRequired() {
				return err
			}
			o.log.Warn("metrics disabled: the default --metrics-listen is in use; set --metrics-listen", "error", err)
		} else {
			o.msrv = ms
			o.log.Info("metrics serving", "listen", ms.Addr(), "path", "/metrics")
			if f.ops.profiling {
				o.log.Info("profiling serving", "url", pageURLFor(ms.Addr())+"debug/pprof/", "auth", o.auth != nil)
			}
			if page != nil {
				u := pageURLFor(ms.Addr())
				o.pageURL.Store(&u)
				o.log.Info("status page serving", "url", u, "auth", o.auth != nil)
			}
		}
	}
	o.wg.Go(func() {
		for {
			select {
			case <-rctx.Done():
				return
			case <-o.hup:
				o.reload()
			}
		}
	})
	return nil
}

// reload re-reads the tokens and the TLS certificate; a failure keeps the old.
func (o *ops) reload() {
	if o.auth == nil && o.tls == nil {
		o.log.Info("SIGHUP: nothing to reload (no --auth-tokens, no --tls-cert)")
		return
	}
	if o.auth != nil {
		_ = o.auth.Reload() // logs its own outcome
	}
	if o.tls != nil {
		if err := o.tls.Reload(); err != nil {
			o.log.Error("TLS certificate reload failed; keeping the previous one", "error", err)
			return
		}
		o.log.Info("TLS certificate reloaded")
	}
}

func (o *ops) close() {
	signal.Stop(o.hup)
	if o.cancel != nil {
		o.cancel()
	}
	o.wg.Wait()
	if o.msrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := o.msrv.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			o.log.Warn("metrics server shutdown", "error", err)
		}
	}
}
