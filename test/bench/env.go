package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/clients/builtin"
	"github.com/confighub/confighub/internal/engine"
	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
	"github.com/confighub/confighub/internal/store/bolt"
	"github.com/confighub/confighub/sink"
)

// maxMsg is the gRPC message limit of the harness's hub and clients, so a
// 20 MiB unary push compares like with like against the raw gRPC baseline.
const maxMsg = 64 << 20

// env is one hub in this process: the bbolt store in a temp dir, the
// engine with the built-in kinds and the bench kind, the gRPC server on
// 127.0.0.1 and a client connection to it over loopback.
type env struct {
	dir     string
	store   *bolt.Store
	eng     *engine.Engine
	hub     *hub.Hub
	srv     *server.Server
	conn    *grpc.ClientConn
	client  *hubclient.Client
	applies *applyLog
	served  chan error
}

type envOptions struct {
	maxApplies  int
	watchBuffer int
	kongURLs    []string // one Kong sink per gateway URL: gw-0000, gw-0001, ...
}

func newEnv(ctx context.Context, eo envOptions) (_ *env, err error) {
	e := &env{applies: newApplyLog(), served: make(chan error, 1)}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.dir, err = os.MkdirTemp("", "confighub-bench-"); err != nil {
		return nil, err
	}
	if e.store, err = bolt.Open(filepath.Join(e.dir, "confighub.db")); err != nil {
		return nil, fmt.Errorf("open bolt store: %w", err)
	}
	reg := sink.NewRegistry()
	if err := builtin.Register(reg, filepath.Join(e.dir, "out")); err != nil {
		return nil, err
	}
	if err := registerBench(reg, e.applies); err != nil {
		return nil, err
	}
	eopts := []engine.Option{engine.WithRecorder(e.store)}
	if eo.maxApplies > 0 {
		eopts = append(eopts, engine.WithMaxConcurrentApplies(eo.maxApplies))
	}
	if eo.watchBuffer > 0 {
		eopts = append(eopts, engine.WithWatchBuffer(eo.watchBuffer))
	}
	e.eng = engine.New(reg, eopts...)
	e.hub = hub.New(e.store, hub.PortsOf(e.eng))
	if err := e.hub.Start(ctx, nil); err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	for i, u := range eo.kongURLs {
		if err := e.putSinks(ctx, kongSpec(fmt.Sprintf("gw-%04d", i), u)); err != nil {
			return nil, err
		}
	}
	if e.srv, err = server.New(e.hub, server.WithMaxMessageBytes(maxMsg)); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { e.served <- e.srv.Serve(lis) }()
	e.conn, err = grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)))
	if err != nil {
		return nil, err
	}
	// Every Push uploads: scenarios 1 and 8 measure UploadConfig with it,
	// and unary pushes call client.Hub.
	e.client = hubclient.New(e.conn, hubclient.WithUnaryLimit(0))
	return e, nil
}

func (e *env) close() {
	if e.conn != nil {
		_ = e.conn.Close()
	}
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e.srv.Shutdown(ctx)
		cancel()
		reportServeErr(<-e.served)
	}
	if e.eng != nil {
		e.eng.Stop()
	}
	if e.store != nil {
		_ = e.store.Close()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// push sends cfg with the unary PushConfig and returns its generation.
func (e *env) push(ctx context.Context, cfg []byte) (uint64, error) {
	res, err := e.client.Hub.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: cfg, Format: confighubv1.Format_FORMAT_JSON})
	if err != nil {
		return 0, fmt.Errorf("push: %w", err)
	}
	return res.GetGeneration(), nil
}

func (e *env) putSinks(ctx context.Context, specs ...*confighubv1.Sink) error {
	for _, s := range specs {
		if _, _, err := e.hub.PutSink(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// reportServeErr prints an error a gRPC server's Serve returned (nil after
// a normal stop).
func reportServeErr(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "confighub-bench: serve:", err)
	}
}
