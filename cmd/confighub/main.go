// Command confighub runs the config-distribution hub: it accepts Kong
// declarative configurations over gRPC, stores them durably, and fans them
// out to its sinks.
package main

import (
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
	"strings"
	"syscall"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
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
	listen          string
	dataDir         string
	fileSinkRoot    string
	storeKind       string
	sinks           string
	logLevel        string
	logFormat       string
	maxMsg          int
	maxConfig       int64
	uploadBudget    int64
	maxConcurrent   int
	history         int
	historyBytes    int64
	shutdownTimeout time.Duration
	limits          limitFlags   // bounds and --memory-limit (limits.go)
	replica         replicaFlags // --store etcd (replicated.go)
	cluster         clusterFlags // --cluster-* (cluster.go)
	ops             opsFlags     // auth, TLS, metrics, diagnostics (ops.go)
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

// retention is --history and --history-bytes.
func (f flags) retention() store.Retention {
	return store.Retention{History: f.history, Bytes: f.historyBytes}
}

// hubOptions are the hub's options from the flags.
func (f flags) hubOptions(log *slog.Logger, secrets hub.SinkSecrets) []hub.Option {
	return []hub.Option{hub.WithLogger(log), hub.WithMaxConfigBytes(f.maxConfig), hub.WithSinkSecrets(secrets),
		hub.WithUploadBudgetBytes(f.uploadBudget), hub.WithLimits(f.limits.hub)}
}

// serverOptions are the gRPC server's options from the flags.
func (f flags) serverOptions(log *slog.Logger) []server.Option {
	return []server.Option{server.WithLogger(log), server.WithMaxMessageBytes(f.maxMsg), server.WithMaxConcurrentStreams(f.limits.connStreams)}
}

// fileSinkRootDir is --file-sink-root, by default <data-dir>/out.
func (f flags) fileSinkRootDir() string {
	if f.fileSinkRoot != "" {
		return f.fileSinkRoot
	}
	return filepath.Join(f.dataDir, "out")
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

func openStore(f flags) (store.Store, error) {
	switch f.storeKind {
	case "bolt":
		if err := os.MkdirAll(f.dataDir, 0o750); err != nil {
			return nil, fmt.Errorf("--data-dir %s: %w", f.dataDir, err)
		}
		return bolt.Open(filepath.Join(f.dataDir, "confighub.db"), bolt.WithRetention(f.retention()))
	case "memory":
		return memory.New(memory.WithRetention(f.retention())), nil
	}
	return nil, fmt.Errorf("--store %q: want bolt, etcd or memory", f.storeKind)
}

// sinkSecrets keys the fingerprints of sink secrets with the store's key
// (created at the first start), so that they stay the same across
// restarts and replicas.
func sinkSecrets(ctx context.Context, st store.Store) (*redact.SinkSecrets, error) {
	fresh := make([]byte, redact.FingerprintKeyBytes)
	_, _ = rand.Read(fresh) // never fails (crypto/rand)
	key, err := st.FingerprintKey(ctx, fresh)
	if err != nil {
		return nil, fmt.Errorf("read the fingerprint key of sink secrets: %w", err)
	}
	return redact.NewSinkSecrets(key), nil
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "confighub: %v\n", err)
		return 2
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
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
	// The root is created by the first file sink write.
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
	if f.storeKind == "etcd" {
		return serveReplicated(ctx, f, log, seed, reg, o, cl)
	}
	st, err := openStore(f)
	if err != nil {
		return err
	}
	defer st.Close()

	eng := engine.New(reg, append([]engine.Option{
		engine.WithLogger(log),
		engine.WithRecorder(st),
		engine.WithMaxConcurrentApplies(f.maxConcurrent),
	}, o.engineOptions()...)...)
	defer eng.Stop()
	defer cl.close(log) // before the engine stops: Apply waits on the connections
	secrets, err := sinkSecrets(ctx, st)
	if err != nil {
		return err
	}
	h := hub.New(st, hub.PortsOf(eng), append(f.hubOptions(log, secrets), o.hubOptions()...)...)
	if err := h.Start(ctx, seed); err != nil {
		if f.sinks != "" {
			return fmt.Errorf("start (sinks file %s): %w", f.sinks, err)
		}
		return fmt.Errorf("start: %w", err)
	}
	releaseStartGarbage()
	cl.serve(eng, log)
	srv, err := server.New(h, append(f.serverOptions(log), o.serverOptions()...)...)
	if err != nil {
		return err
	}
	o.exportBounds(h, srv)
	attrs := []any{"store", f.storeKind}
	if f.storeKind == "bolt" { // the memory store has no data dir
		attrs = append(attrs, "data_dir", f.dataDir)
	}
	o.page = h
	return listenAndServe(ctx, f, log, o, srv, append(attrs, "file_sink_root", f.fileSinkRootDir(), "sink_kinds", reg.Kinds())...)
}

// listenAndServe serves gRPC on --listen until ctx ends, then shuts down:
// stop accepting, end the status watches (they never end on their own),
// let unary calls and uploads finish within --shutdown-timeout. The
// caller's deferred stops follow (fan-out, engine, store). attrs go on the
// "confighub serving" line.
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

// releaseStartGarbage gives the memory the start freed back to the OS at
// once: opening the store reads every record (to verify it), then every
// stream's configuration again, and without this an idle hub kept about
// twice its configurations in RSS until the runtime's scavenger caught up
// (two 200 MiB streams: 828 MiB idle).
func releaseStartGarbage() { debug.FreeOSMemory() }
