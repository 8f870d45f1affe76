// Command confighub runs the config-distribution hub: it accepts Kong declarative configurations
// over gRPC, stores them durably, and fans them out to its sinks.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/internal/redact"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/sinksfile"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/bolt"
	"github.com/confighub/confighub/internal/store/memory"
	"github.com/confighub/confighub/sink"
)

var _ hub.Engine = (*engine.Engine)(nil)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

type flags struct {
	listen, dataDir, fileSinkRoot, storeKind, sinks, logLevel, logFormat string
	maxMsg, maxConcurrent, history                                       int
	maxConfig, uploadBudget, historyBytes                                int64
	shutdownTimeout                                                      time.Duration
	limits                                                               limitFlags   // bounds and --memory-limit (limits.go)
	replica                                                              replicaFlags // --store etcd (replicated.go)
	cluster                                                              clusterFlags // --cluster-* (cluster.go)
	ops                                                                  opsFlags     // auth, TLS, metrics, diagnostics (ops.go)
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("confighub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: confighub [flags]\n\nRuns the confighub gRPC hub. Flags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7070", "gRPC listen address")
	fs.StringVar(&f.dataDir, "data-dir", "./data", "directory of the embedded bbolt store (--store bolt) and of the default --file-sink-root")
	fs.StringVar(&f.fileSinkRoot, "file-sink-root", "", "directory that file sinks write under (default <data-dir>/out): a file.path is relative to it or an absolute path inside it; a path that leaves it is refused")
	fs.StringVar(&f.storeKind, "store", "bolt", "store backend: bolt (embedded, durable), etcd (replicas sharing etcd, see --etcd-*) or memory (tests only: loses everything on exit)")
	addReplicaFlags(fs, &f.replica)
	fs.StringVar(&f.sinks, "sinks", "", "YAML file with a list of sinks (the shape of PutSink's sink); put at every start")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.IntVar(&f.maxMsg, "max-message-bytes", server.DefaultMaxMessageBytes, "largest gRPC message; larger configs must use UploadConfig, whose chunks must fit in it too (hubclient sends 1 MiB chunks unless WithChunkBytes says otherwise)")
	fs.Int64Var(&f.maxConfig, "max-config-bytes", hub.DefaultMaxConfigBytes, "largest configuration accepted (push or upload)")
	fs.Int64Var(&f.uploadBudget, "upload-budget-bytes", hub.DefaultUploadBudgetBytes, "hub-wide budget of bytes held by UploadConfig streams in flight (the sum of their announced total_size): an upload that would exceed it is refused with ResourceExhausted before its bytes are read; at least --max-config-bytes, 0 for no budget")
	fs.IntVar(&f.maxConcurrent, "max-concurrent-applies", engine.DefaultMaxConcurrentApplies, "hub-wide limit on sink applies in flight, per pool: gateway sinks (kong, kong-db) and every other sink each get this many")
	fs.IntVar(&f.history, "history", store.DefaultHistory, "generations of each stream kept with their bytes (history, GetConfig of an older generation, rollback), at least 1 (the current one); the oldest go first")
	fs.Int64Var(&f.historyBytes, "history-bytes", store.DefaultHistoryBytes, "bytes of configuration kept per stream across its retained generations, whichever of this and --history is reached first; the current generation is always kept; 0 for no byte bound")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful shutdown (SIGTERM, SIGINT) waits for pushes and other RPCs in flight; WatchStatus streams end at once with Unavailable")
	addLimitFlags(fs, &f.limits)
	addOpsFlags(fs, &f.ops)
	addClusterFlags(fs, &f.cluster)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	fs.Visit(func(fl *flag.Flag) { f.ops.metricsListenSet = f.ops.metricsListenSet || fl.Name == "metrics-listen" })
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if f.ops.profiling && f.ops.metricsListen == "" {
		return f, errors.New("--profiling serves the profiles on the metrics listener, which --metrics-listen \"\" disables: set --metrics-listen ADDR, or drop --profiling")
	}
	if f.history < 1 {
		return f, fmt.Errorf("--history %d: at least 1 (the current generation)", f.history)
	}
	if f.historyBytes < 0 {
		return f, fmt.Errorf("--history-bytes %d: 0 (no bound) or more", f.historyBytes)
	}
	if err := f.limits.check(f.maxConfig); err != nil {
		return f, err
	}
	if f.uploadBudget != 0 && f.uploadBudget < f.maxConfig {
		return f, fmt.Errorf("--upload-budget-bytes %d is smaller than --max-config-bytes %d: the largest configuration could never be uploaded", f.uploadBudget, f.maxConfig)
	}
	return f, nil
}

func (f flags) retention() store.Retention {
	return store.Retention{History: f.history, Bytes: f.historyBytes}
}

func (f flags) fileSinkRootDir() string {
	return cmp.Or(f.fileSinkRoot, filepath.Join(f.dataDir, "out"))
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	ho := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// storeMode is what a --store mode gives serve; serving runs once the server exists, and its stop before the engine stops.
type storeMode struct {
	store        store.Store
	log          *slog.Logger
	engine       []engine.Option
	ports        func(eng *engine.Engine) (hub.Ports, hybrid.Sinks) // and who takes connected data planes
	what         string
	startTimeout time.Duration
	serving      func(ctx context.Context, srv *server.Server) (stop func())
	attrs        []any // on the "confighub serving" line
	close        func()
}

// openStore opens --store bolt or memory: one hub on its own store.
func openStore(f flags, log *slog.Logger) (*storeMode, error) {
	var st store.Store
	attrs := []any{"store", f.storeKind}
	switch f.storeKind {
	case "bolt":
		if err := os.MkdirAll(f.dataDir, 0o750); err != nil {
			return nil, fmt.Errorf("--data-dir %s: %w", f.dataDir, err)
		}
		b, err := bolt.Open(filepath.Join(f.dataDir, "confighub.db"), bolt.WithRetention(f.retention()))
		if err != nil {
			return nil, err
		}
		st, attrs = b, append(attrs, "data_dir", f.dataDir)
	case "memory":
		st = memory.New(memory.WithRetention(f.retention()))
	default:
		return nil, fmt.Errorf("--store %q: want bolt, etcd or memory", f.storeKind)
	}
	what := "start"
	if f.sinks != "" {
		what = "start (sinks file " + f.sinks + ")"
	}
	return &storeMode{store: st, log: log, what: what, attrs: attrs,
		ports:   func(eng *engine.Engine) (hub.Ports, hybrid.Sinks) { return hub.PortsOf(eng), eng },
		serving: func(context.Context, *server.Server) func() { return func() {} },
		close:   func() { _ = st.Close() }}, nil
}

// sinkSecrets keys sink secret fingerprints with the store's key, stable across restarts and replicas.
func sinkSecrets(ctx context.Context, st store.Store) (*redact.SinkSecrets, error) {
	fresh := make([]byte, redact.FingerprintKeyBytes)
	_, _ = rand.Read(fresh)
	key, err := st.FingerprintKey(ctx, fresh)
	if err != nil {
		return nil, fmt.Errorf("read the fingerprint key of sink secrets: %w", err)
	}
	return redact.NewSinkSecrets(key), nil
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	var log *slog.Logger
	f, err := parseFlags(args, stderr)
	if err == nil {
		log, err = newLogger(stderr, f.logLevel, f.logFormat)
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "confighub: %v\n", err)
		return 2
	}
	if err := serve(ctx, f, log); err != nil {
		log.Error("confighub stopped", "error", err)
		fmt.Fprintf(stderr, "confighub: %v\n", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, f flags, log *slog.Logger) error {
	var seed []*confighubv1.Sink
	if f.sinks != "" {
		s, err := sinksfile.Load(f.sinks)
		if err != nil {
			return err
		}
		seed = s
	}
	reg := sink.NewRegistry()
	if err := builtin.Register(reg, f.fileSinkRootDir()); err != nil {
		return err
	}
	cl, err := newCluster(f.cluster, reg, log)
	if err != nil {
		return err
	}
	o, err := startOps(f, log)
	if err != nil {
		if cl != nil {
			_ = cl.lis.Close()
		}
		return err
	}
	defer o.close()
	if err := applyMemoryLimit(f.limits.memoryLimit, cgroupRoot, log); err != nil {
		return err
	}
	open := openStore
	if f.storeKind == "etcd" {
		open = openReplicated
	}
	m, err := open(f, log)
	if err != nil {
		return err
	}
	defer m.close()
	log = m.log
	eng := engine.New(reg, slices.Concat([]engine.Option{
		engine.WithLogger(log),
		engine.WithRecorder(m.store),
		engine.WithMaxConcurrentApplies(f.maxConcurrent),
	}, m.engine, o.engineOptions())...)
	defer eng.Stop()
	defer cl.close(log) // before the engine stops: Apply waits on the connections
	ports, dataPlanes := m.ports(eng)
	sctx := ctx
	if m.startTimeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, m.startTimeout)
		defer cancel()
	}
	var h *hub.Hub
	secrets, err := sinkSecrets(sctx, m.store)
	if err == nil {
		hopts := []hub.Option{hub.WithLogger(log), hub.WithMaxConfigBytes(f.maxConfig), hub.WithSinkSecrets(secrets),
			hub.WithUploadBudgetBytes(f.uploadBudget), hub.WithLimits(f.limits.hub)}
		if o.metrics != nil {
			hopts = append(hopts, hub.WithRefusals(o.metrics.Bounds))
		}
		h = hub.New(m.store, ports, hopts...)
		err = h.Start(sctx, seed)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.what, err)
	}
	// Return the memory of reading the store to the OS now.
	debug.FreeOSMemory()
	srv, err := server.New(h, append(o.serverOptions(), server.WithLogger(log), server.WithMaxMessageBytes(f.maxMsg),
		server.WithMaxConcurrentStreams(f.limits.connStreams))...)
	if err != nil {
		return err
	}
	if o.metrics != nil {
		o.metrics.Bounds.SetSource(func() []hub.Usage { return append(h.Usage(), srv.ConnectionUsage()) })
	}
	stop := m.serving(ctx, srv)
	defer stop()
	cl.serve(dataPlanes, log)
	o.page = h
	return listenAndServe(ctx, f, log, o, srv, append(m.attrs, "file_sink_root", f.fileSinkRootDir(), "sink_kinds", reg.Kinds())...)
}

// listenAndServe serves gRPC on --listen until ctx ends, then drains within --shutdown-timeout.
func listenAndServe(ctx context.Context, f flags, log *slog.Logger, o *ops, srv *server.Server, attrs ...any) error {
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		srv.GRPC.Stop() // ends its stream workers
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	if err := o.serve(ctx, f, srv); err != nil {
		_ = lis.Close()
		srv.GRPC.Stop()
		return err
	}
	log.Info("confighub serving", append([]any{"listen", lis.Addr().String()}, attrs...)...)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	o.drain.drain()
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-errc; err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
