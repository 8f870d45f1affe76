// Package clustertest runs an embedded etcd server for tests (unit tests of
// cluster/ and the replica e2e tests): one member on 127.0.0.1 with random
// ports and a temporary data dir, which can be stopped and started again on
// the same ports and data.
package clustertest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is one embedded etcd member.
type Etcd struct {
	t          testing.TB
	dir        string
	clientURL  url.URL
	peerURL    url.URL
	e          *embed.Etcd
	compaction string
}

// Option configures the embedded etcd.
type Option func(*Etcd)

// WithRevisionCompaction keeps only the last n revisions (compacted every
// few seconds), so tests can meet a compacted revision.
func WithRevisionCompaction(n int) Option {
	return func(e *Etcd) { e.compaction = fmt.Sprint(n) }
}

// StartEtcd starts an embedded etcd stopped at test cleanup.
func StartEtcd(t testing.TB, opts ...Option) *Etcd {
	t.Helper()
	e := &Etcd{t: t, dir: t.TempDir(), clientURL: freeURL(t), peerURL: freeURL(t)}
	for _, o := range opts {
		o(e)
	}
	e.Start()
	t.Cleanup(e.Stop)
	return e
}

func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

// Endpoint is the client URL (http://127.0.0.1:port).
func (e *Etcd) Endpoint() string { return e.clientURL.String() }

// Start starts the member (again, after Stop) on the same ports and data.
func (e *Etcd) Start() {
	e.t.Helper()
	if e.e != nil {
		return
	}
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = e.dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls = []url.URL{e.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{e.clientURL}
	cfg.ListenPeerUrls = []url.URL{e.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{e.peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if e.compaction != "" {
		cfg.AutoCompactionMode = embed.CompactorModeRevision
		cfg.AutoCompactionRetention = e.compaction
	}
	var (
		srv *embed.Etcd
		err error
	)
	// The port was free when picked; after a Stop it may briefly be held.
	for i := 0; i < 50; i++ {
		srv, err = embed.StartEtcd(cfg)
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		e.t.Fatalf("start embedded etcd: %v", err)
	}
	select {
	case <-srv.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		srv.Close()
		e.t.Fatal("embedded etcd not ready within 30s")
	}
	e.e = srv
}

// Stop stops the member; its data stays for the next Start.
func (e *Etcd) Stop() {
	if e.e == nil {
		return
	}
	e.e.Close()
	<-e.e.Server.StopNotify()
	e.e = nil
}

// Client returns a client of the member, closed at test cleanup.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
