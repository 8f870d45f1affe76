package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is one etcd member: embedded, or the binary named by
// $CONFIGHUB_ETCD_BIN run as a Process. Stop and Restart keep its data dir
// and ports, so a restart is the same member coming back.
type Server struct {
	t         testing.TB
	dir       string
	clientURL url.URL
	peerURL   url.URL
	opts      options
	e         *embed.Etcd
	proc      *Process
}

// Option configures Start.
type Option func(*options)

type options struct {
	maxRequestBytes uint
}

// WithMaxRequestBytes sets the server's --max-request-bytes (default
// etcd's 1.5 MiB).
func WithMaxRequestBytes(n uint) Option { return func(o *options) { o.maxRequestBytes = n } }

// Start runs an etcd member until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), clientURL: freeURL(t), peerURL: freeURL(t)}
	for _, o := range opts {
		o(&s.opts)
	}
	if bin := os.Getenv("CONFIGHUB_ETCD_BIN"); bin != "" && s.opts.maxRequestBytes == 0 {
		s.proc = StartProcess(t, bin)
		return s
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: pick a port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

func (s *Server) start() {
	s.t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = s.dir
	cfg.ListenClientUrls = []url.URL{s.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{s.clientURL}
	cfg.ListenPeerUrls = []url.URL{s.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{s.peerURL}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, s.peerURL.String())
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	if s.opts.maxRequestBytes > 0 {
		cfg.MaxRequestBytes = s.opts.maxRequestBytes
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		s.t.Fatalf("etcdtest: start: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		s.t.Fatalf("etcdtest: server failed: %v", err)
	case <-time.After(30 * time.Second):
		e.Close()
		s.t.Fatal("etcdtest: server not ready within 30s")
	}
	s.e = e
}

// Endpoints are the client URLs.
func (s *Server) Endpoints() []string {
	if s.proc != nil {
		return s.proc.Endpoints()
	}
	return []string{s.clientURL.String()}
}

// Client returns a client closed when the test ends.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   s.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Stop stops the member (idempotent); its data stays.
func (s *Server) Stop() {
	if s.proc != nil {
		s.proc.Stop()
	}
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// Restart starts the stopped member again on the same dir and ports.
func (s *Server) Restart() {
	s.t.Helper()
	if s.proc != nil {
		s.proc.Restart()
		return
	}
	s.Stop()
	s.start()
}
