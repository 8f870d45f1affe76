package rawack

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The baseline's full method names.
const (
	PushMethod   = "/bench.Raw/Push"
	UploadMethod = "/bench.Raw/Upload"
)

type service struct{ f *os.File }

func (r *service) push(in *wrapperspb.BytesValue) (*emptypb.Empty, error) {
	if r.f == nil {
		return &emptypb.Empty{}, nil
	}
	if _, err := r.f.WriteAt(in.GetValue(), 0); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, syscall.Fdatasync(int(r.f.Fd()))
}

func (r *service) upload(st grpc.ServerStream) error {
	var off int64
	for {
		in := new(wrapperspb.BytesValue)
		err := st.RecvMsg(in)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if r.f == nil {
			continue
		}
		n, err := r.f.WriteAt(in.GetValue(), off)
		if err != nil {
			return err
		}
		off += int64(n)
	}
	if r.f != nil {
		if err := syscall.Fdatasync(int(r.f.Fd())); err != nil {
			return err
		}
	}
	return st.SendMsg(&emptypb.Empty{})
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "bench.Raw",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Push",
		Handler: func(srv any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return srv.(*service).push(in)
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Upload",
		ClientStreams: true,
		Handler:       func(srv any, st grpc.ServerStream) error { return srv.(*service).upload(st) },
	}},
}

// Register serves the baseline on s, writing into f (nil: answer only).
// s should have no interceptors, or it measures them too.
func Register(s grpc.ServiceRegistrar, f *os.File) {
	s.RegisterService(&serviceDesc, &service{f: f})
}

// Serve serves the baseline, writing into f (nil: answer only), on a free
// 127.0.0.1 port with a bare grpc.Server, and returns a client connection
// to it; both sides allow messages of up to maxMsg bytes. stop closes the
// connection, stops the server and returns what its Serve returned (nil
// after a stop); f stays open, as it is the caller's.
func Serve(f *os.File, maxMsg int) (conn *grpc.ClientConn, stop func() error, err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	Register(srv, f)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)))
	if err != nil {
		srv.Stop()
		<-served
		return nil, nil, err
	}
	return conn, func() error {
		_ = conn.Close()
		srv.Stop()
		if err := <-served; !errors.Is(err, grpc.ErrServerStopped) { // a Stop before Serve began
			return err
		}
		return nil
	}, nil
}

// Push sends b in one unary call and waits for the ack.
func Push(ctx context.Context, conn grpc.ClientConnInterface, b []byte) error {
	return conn.Invoke(ctx, PushMethod, wrapperspb.Bytes(b), new(emptypb.Empty))
}

// Upload streams b in chunks of chunk bytes, as the hub's upload does, and
// waits for the ack.
func Upload(ctx context.Context, conn grpc.ClientConnInterface, b []byte, chunk int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := conn.NewStream(ctx, &serviceDesc.Streams[0], UploadMethod)
	if err != nil {
		return err
	}
	for off := 0; off < len(b); off += chunk {
		if err := st.SendMsg(wrapperspb.Bytes(b[off:min(off+chunk, len(b))])); err != nil {
			return err
		}
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	return st.RecvMsg(new(emptypb.Empty))
}

// Preallocate creates path with size bytes of zeros written and flushed.
func Preallocate(path string, size int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, 4<<20)
	for off := 0; off < size; off += len(zeros) {
		if _, err := f.WriteAt(zeros[:min(len(zeros), size-off)], int64(off)); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
