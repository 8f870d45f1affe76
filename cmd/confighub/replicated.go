package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/confighub/confighub/internal/cluster"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/internal/server"
	etcdstore "github.com/confighub/confighub/internal/store/etcd"
)

// On replicas, GetConfig of a sink is answered from etcd and the store.
var (
	_ hub.Diagnostics = (*cluster.Diagnostics)(nil)
	_ cluster.Store   = (*etcdstore.Store)(nil)
)

// replicaFlags configure --store etcd (hub replicas sharing one etcd).
type replicaFlags struct {
	endpoints, ca, cert, key, username, password, prefix, replicaID string
	leaseTTL, opTimeout                                             time.Duration
}

func addReplicaFlags(fs *flag.FlagSet, r *replicaFlags) {
	host, _ := os.Hostname()
	fs.StringVar(&r.endpoints, "etcd-endpoints", "", "comma-separated etcd client URLs (--store etcd), e.g. https://etcd-0:2379,https://etcd-1:2379")
	fs.StringVar(&r.ca, "etcd-ca", "", "CA certificate file that signs the etcd servers' certificates")
	fs.StringVar(&r.cert, "etcd-cert", "", "client certificate file for etcd (mTLS)")
	fs.StringVar(&r.key, "etcd-key", "", "client key file for etcd (mTLS)")
	fs.StringVar(&r.username, "etcd-username", os.Getenv("CONFIGHUB_ETCD_USERNAME"), "etcd user (default $CONFIGHUB_ETCD_USERNAME)")
	fs.StringVar(&r.password, "etcd-password", "", "etcd password (prefer $CONFIGHUB_ETCD_PASSWORD: flags show in ps)")
	fs.StringVar(&r.prefix, "etcd-prefix", "/confighub", "key prefix in etcd; hubs with different prefixes share an etcd cluster independently")
	fs.StringVar(&r.replicaID, "replica-id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this replica's member id (unique among the replicas)")
	fs.DurationVar(&r.leaseTTL, "lease-ttl", cluster.DefaultLeaseTTL, "membership lease TTL: how soon the sinks of a dead or hung replica move")
	fs.DurationVar(&r.opTimeout, "etcd-op-timeout", cluster.DefaultOpTimeout, "bound of each etcd call: a push in flight when etcd becomes unreachable fails with Unavailable after it, and the readiness probe reports NOT_SERVING")
}

func (r replicaFlags) clientConfig() (clientv3.Config, error) {
	var eps []string
	for _, e := range strings.Split(r.endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return clientv3.Config{}, fmt.Errorf("--store etcd needs --etcd-endpoints")
	}
	if r.leaseTTL < time.Second {
		return clientv3.Config{}, fmt.Errorf("--lease-ttl %s: at least 1s (etcd leases count whole seconds)", r.leaseTTL)
	}
	if r.opTimeout <= 0 {
		return clientv3.Config{}, fmt.Errorf("--etcd-op-timeout %s: must be positive", r.opTimeout)
	}
	cfg := clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		// Keepalive pings find a dead connection within a TTL.
		DialKeepAliveTime:    r.leaseTTL / 2,
		DialKeepAliveTimeout: r.leaseTTL / 2,
		Username:             r.username,
		Password:             cmp.Or(r.password, os.Getenv("CONFIGHUB_ETCD_PASSWORD")),
		Logger:               zap.NewNop(), // the hub logs what matters
		// Reconnect to a restarted etcd within a second, not gRPC's default two minutes.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: r.opTimeout,
		})},
	}
	if r.ca != "" || r.cert != "" || r.key != "" {
		if (r.cert == "") != (r.key == "") {
			return clientv3.Config{}, fmt.Errorf("--etcd-cert and --etcd-key go together")
		}
		info := transport.TLSInfo{CertFile: r.cert, KeyFile: r.key, TrustedCAFile: r.ca}
		tc, err := info.ClientConfig()
		if err != nil {
			return clientv3.Config{}, fmt.Errorf("etcd TLS: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		cfg.TLS = tc
	}
	return cfg, nil
}

// openReplicated opens --store etcd: this hub is one of several replicas sharing etcd (package cluster).
func openReplicated(f flags, log *slog.Logger) (*storeMode, error) {
	r := f.replica
	ccfg, err := r.clientConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client (%s): %w", r.endpoints, err)
	}
	prefix := strings.TrimSuffix(r.prefix, "/")
	st := etcdstore.New(cli, etcdstore.WithPrefix(prefix+"/"), etcdstore.WithRetention(f.retention()))
	log = log.With("replica", r.replicaID)

	var (
		rep    *cluster.Replica
		health atomic.Pointer[server.Server]
	)
	ready := func() bool { return rep.Ready() }
	guarded := cluster.Guard(st, ready, r.opTimeout)
	mem := cluster.NewMembership(cli, prefix, r.replicaID, r.leaseTTL, log)
	// The engine keeps every sink and runs the ones the replica owns.
	place := cluster.NewPlacement(r.replicaID)
	m := &storeMode{store: guarded, log: log, what: "start (etcd " + r.endpoints + ")", startTimeout: 30 * time.Second,
		engine: []engine.Option{
			engine.WithOwnership(place),
			// Set before the engine gets its first stream (hub.Start).
			engine.WithNewStream(func(s string) { rep.Follow(s) }),
		},
		attrs: []any{"store", "etcd", "etcd_endpoints", r.endpoints, "etcd_prefix", prefix, "lease_ttl", r.leaseTTL},
		close: func() { _ = st.Close(); _ = cli.Close() },
	}
	m.ports = func(eng *engine.Engine) (hub.Ports, hybrid.Sinks) {
		rep = cluster.New(eng, place, st, cli, mem, prefix, cluster.Options{Logger: log, OpTimeout: r.opTimeout,
			Ready: func(ok bool) {
				if s := health.Load(); s != nil {
					s.SetServing(ok)
				}
			}})
		ports := hub.PortsOf(eng)
		ports.Status = rep.View()
		ports.Diagnostics = rep.Diagnostics()
		return ports, rep // a data plane is claimed by the replica it connects to
	}
	// On every exit the replica leaves the membership before the engine stops.
	m.serving = func(ctx context.Context, srv *server.Server) func() {
		health.Store(srv)
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { rep.Run(ctx) })
		return func() { cancel(); wg.Wait() }
	}
	return m, nil
}
