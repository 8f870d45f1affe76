package rawack_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/confighub/confighub/internal/rawack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T, f *os.File) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rawack.Register(srv, f)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return conn
}

// TestPushAndUploadWriteTheBytes: Push leaves the bytes at the file's
// start, Upload every chunk at its offset, the rest of the preallocated
// file stays zero; with no file both answer.
func TestPushAndUploadWriteTheBytes(t *testing.T) {
	ctx := t.Context()
	const size = 64
	f, err := rawack.Preallocate(filepath.Join(t.TempDir(), "raw"), size)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn := serve(t, f)
	read := func() []byte {
		b := make([]byte, size+1)
		n, _ := f.ReadAt(b, 0)
		return b[:n]
	}
	if got := read(); !bytes.Equal(got, make([]byte, size)) {
		t.Fatalf("preallocated %q, want %d zeros", got, size)
	}
	if err := rawack.Push(ctx, conn, []byte("pushed")); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("pushed"), make([]byte, size-6)...)
	if got := read(); !bytes.Equal(got, want) {
		t.Fatalf("after Push the file is %q, want %q", got, want)
	}
	up := []byte("uploaded in chunks of three bytes")
	if err := rawack.Upload(ctx, conn, up, 3); err != nil {
		t.Fatal(err)
	}
	want = append(append([]byte{}, up...), make([]byte, size-len(up))...)
	if got := read(); !bytes.Equal(got, want) {
		t.Fatalf("after Upload the file is %q, want %q", got, want)
	}

	bare := serve(t, nil)
	if err := rawack.Push(ctx, bare, []byte("x")); err != nil {
		t.Fatalf("Push with no file: %v", err)
	}
	if err := rawack.Upload(ctx, bare, up, 3); err != nil {
		t.Fatalf("Upload with no file: %v", err)
	}
}
