package rawack_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/confighub/confighub/test/bench/rawack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T, f *os.File, maxMsg int) *grpc.ClientConn {
	t.Helper()
	conn, stop, err := rawack.Serve(f, maxMsg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
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
	conn := serve(t, f, 1<<20)
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

	bare := serve(t, nil, 1<<20)
	if err := rawack.Push(ctx, bare, []byte("x")); err != nil {
		t.Fatalf("Push with no file: %v", err)
	}
	if err := rawack.Upload(ctx, bare, up, 3); err != nil {
		t.Fatalf("Upload with no file: %v", err)
	}
}

// TestServeAllowsMaxMsg: Serve's server and client take messages of up to
// maxMsg bytes, above grpc's 4 MiB default, and refuse larger ones.
func TestServeAllowsMaxMsg(t *testing.T) {
	const maxMsg = 5 << 20
	conn := serve(t, nil, maxMsg)
	big := make([]byte, maxMsg-64) // room for the message's framing
	if err := rawack.Push(t.Context(), conn, big); err != nil {
		t.Fatalf("Push of %d bytes with a limit of %d: %v", len(big), maxMsg, err)
	}
	if err := rawack.Push(t.Context(), conn, make([]byte, maxMsg+1)); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Push of %d bytes with a limit of %d: %v, want ResourceExhausted", maxMsg+1, maxMsg, err)
	}
}
