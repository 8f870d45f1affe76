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
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/hubclient"
)

// rawService is the baseline of scenario 1: a bare gRPC unary call carrying
// the same bytes (no interceptors), whose handler writes and fsyncs them
// (truncate, write, fsync, like os.WriteFile + Sync) before answering.
type rawService struct{ path string }

func (r *rawService) push(ctx context.Context, in *wrapperspb.BytesValue) (*emptypb.Empty, error) {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(in.GetValue()); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &emptypb.Empty{}, f.Close()
}

var rawServiceDesc = grpc.ServiceDesc{
	ServiceName: "bench.Raw",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Push",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return srv.(*rawService).push(ctx, in)
		},
	}},
}

type rawBaseline struct {
	srv    *grpc.Server
	conn   *grpc.ClientConn
	served chan error
}

func startRaw(dir string) (*rawBaseline, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &rawBaseline{srv: grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg)), served: make(chan error, 1)}
	r.srv.RegisterService(&rawServiceDesc, &rawService{path: filepath.Join(dir, "raw.json")})
	go func() { r.served <- r.srv.Serve(lis) }()
	r.conn, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)))
	if err != nil {
		r.srv.Stop()
		return nil, err
	}
	return r, nil
}

func (r *rawBaseline) push(ctx context.Context, b []byte) error {
	return r.conn.Invoke(ctx, "/bench.Raw/Push", wrapperspb.Bytes(b), new(emptypb.Empty))
}

func (r *rawBaseline) close() {
	_ = r.conn.Close()
	r.srv.Stop()
	reportServeErr(<-r.served)
}

// scenarioPushAck: scenario 1.
func scenarioPushAck(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer e.close()
	raw, err := startRaw(e.dir)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	upload := hubclient.New(e.conn) // switches to UploadConfig above 4 MiB

	var rows []Row
	stamp := 0
	for _, size := range []int{1 << 20, 20 << 20} {
		base := genConfig(size)
		runs := o.runs
		var hubT, rawT, upT []time.Duration
		for i := -2; i < runs; i++ { // two warm-up rounds
			stamp++
			cfg := stamped(base, stamp)
			t0 := time.Now()
			if _, err := e.push(ctx, cfg); err != nil {
				return nil, err
			}
			th := time.Since(t0)
			// The hub removes the replaced config file after the ack: let
			// that finish so the baseline does not pay for it.
			e.store.WaitRemoved()
			t0 = time.Now()
			if err := raw.push(ctx, cfg); err != nil {
				return nil, fmt.Errorf("raw baseline: %w", err)
			}
			tr := time.Since(t0)
			var tu time.Duration
			if size > hubclient.DefaultUnaryLimit {
				stamp++
				cfg = stamped(base, stamp)
				t0 = time.Now()
				if _, err := upload.Push(ctx, hubclient.Push{Config: cfg, Format: confighubv1.Format_FORMAT_JSON}); err != nil {
					return nil, fmt.Errorf("upload: %w", err)
				}
				tu = time.Since(t0)
				e.store.WaitRemoved()
			}
			if i >= 0 {
				hubT, rawT = append(hubT, th), append(rawT, tr)
				if tu > 0 {
					upT = append(upT, tu)
				}
			}
		}
		mib := size >> 20
		log("  %d MiB: hub %.1f ms, raw %.1f ms", mib, medianMS(hubT), medianMS(rawT))
		rows = append(rows, ratioRow(fmt.Sprintf("1 push ack %d MiB (PushConfig, bbolt)", mib), "ms", medianMS(hubT), medianMS(rawT), 1.2, runs))
		if len(upT) > 0 {
			r := ratioRow(fmt.Sprintf("1 upload ack %d MiB (UploadConfig, 1 MiB chunks)", mib), "ms", medianMS(upT), medianMS(rawT), 1.2, runs)
			r.Info = true
			r.Note = "hubclient.Push above 4 MiB; baseline is the same unary raw call"
			rows = append(rows, r)
		}
	}
	return rows, nil
}
