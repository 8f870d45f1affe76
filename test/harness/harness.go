package harness

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// RepoRoot is the repository's top folder (where go.mod is).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binaries are built commands, by name (the folder under cmd/ or a package
// path relative to the repository).
type Binaries struct {
	Dir string
}

// Path of a built binary.
func (b *Binaries) Path(name string) string { return filepath.Join(b.Dir, filepath.Base(name)) }

// Build compiles the named packages (e.g. "cmd/confighub",
// "examples/webhook-plugin") into a temporary folder.
func Build(pkgs ...string) (*Binaries, error) {
	dir, err := os.MkdirTemp("", "confighub-e2e-bin-")
	if err != nil {
		return nil, err
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return &Binaries{Dir: dir}, nil
}

// MustBuild is Build for TestMain: it exits the test binary on failure.
func MustBuild(pkgs ...string) *Binaries {
	b, err := Build(pkgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return b
}

// Remove deletes the built binaries.
func (b *Binaries) Remove() { _ = os.RemoveAll(b.Dir) }

// Process is a running binary with its captured output.
type Process struct {
	Cmd  *exec.Cmd
	out  *SyncBuffer
	done chan struct{}
	err  error
}

// SyncBuffer collects a process's or goroutine's output; it is safe for
// one writer and concurrent readers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs a binary; its stdout and stderr are captured and shown in the
// test log if the test fails. The process is killed at cleanup.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(bin, args...), out: &SyncBuffer{}, done: make(chan struct{})}
	p.Cmd.Stdout = p.out
	p.Cmd.Stderr = p.out
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of %s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), tail(p.Output(), 8000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// Output is everything the process printed so far.
func (p *Process) Output() string { return p.out.String() }

// Kill sends SIGKILL (a crash) and waits for the process to end.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to 20s for a graceful exit; it returns the
// exit error.
func (p *Process) Stop() error {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.Kill()
	}
	return p.err
}

// Signal sends sig.
func (p *Process) Signal(sig os.Signal) { _ = p.Cmd.Process.Signal(sig) }

// Done is closed when the process ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error once Done is closed.
func (p *Process) Err() error { <-p.done; return p.err }

// WaitOutput waits until the output matches re (bounded by timeout) and
// returns the first submatch group, or the whole match.
func (p *Process) WaitOutput(t testing.TB, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if m := re.FindStringSubmatch(p.Output()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case <-p.done:
			t.Fatalf("process ended (%v) before its output matched %s:\n%s", p.err, re, tail(p.Output(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("output did not match %s within %s:\n%s", re, timeout, tail(p.Output(), 4000))
		}
	}
}

// Hub is a running confighub process.
type Hub struct {
	*Process
	Addr    string
	DataDir string
}

var servingRE = regexp.MustCompile(`confighub serving.* listen=(\S+)`)

// StartHub runs confighub on a free loopback port with a fresh data dir
// (unless args set --data-dir) and waits until it serves.
func StartHub(t testing.TB, bins *Binaries, args ...string) *Hub {
	t.Helper()
	dataDir := ""
	hasData := hasFlag(args, "--data-dir")
	full := []string{"--listen", "127.0.0.1:0"}
	if !hasFlag(args, "--metrics-listen") {
		// Hubs started side by side must not compete for the default port.
		full = append(full, "--metrics-listen", "127.0.0.1:0")
	}
	full = append(full, args...)
	if !hasData {
		dataDir = t.TempDir()
		full = append(full, "--data-dir", dataDir)
	}
	p := Start(t, bins.Path("confighub"), full...)
	addr := p.WaitOutput(t, servingRE, 60*time.Second)
	return &Hub{Process: p, Addr: addr, DataDir: dataDir}
}

// ServeGRPC serves srv on a free loopback port until the test ends and
// returns its address. At cleanup srv stops, then each of after runs in
// order (the engine's Stop, the store's Close of an in-process hub).
func ServeGRPC(t testing.TB, srv *grpc.Server, after ...func()) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-done
		for _, f := range after {
			f()
		}
	})
	return lis.Addr().String()
}

// Dial opens a gRPC client connection to addr (plaintext), closed at cleanup.
func Dial(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20)),
	}, opts...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Eventually polls cond every 20ms until it holds or timeout passes. It is
// for observable conditions of real processes, not for synchronising code
// under a fake clock.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, fmt.Sprintf(format, args...))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// GrpcurlPath is the real grpcurl binary: $CONFIGHUB_GRPCURL or bin/grpcurl
// in the repository.
func GrpcurlPath() string {
	if p := os.Getenv("CONFIGHUB_GRPCURL"); p != "" {
		return p
	}
	return filepath.Join(RepoRoot(), "bin", "grpcurl")
}

var grpcurlLogMu sync.Mutex

// Grpcurl runs the real grpcurl with args and returns its stdout; stderr is
// returned in the error. A missing binary skips the test (make test installs
// it and then checks that it was used).
func Grpcurl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return GrpcurlStdin(t, nil, args...)
}

// GrpcurlStdin is Grpcurl with data on standard input (for `-d @`).
func GrpcurlStdin(t testing.TB, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	bin := GrpcurlPath()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the real grpcurl binary is needed (run `make tools`): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	recordGrpcurl(bin, args)
	if err != nil {
		return stdout.String(), fmt.Errorf("grpcurl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func recordGrpcurl(bin string, args []string) {
	logPath := os.Getenv("CONFIGHUB_GRPCURL_LOG")
	if logPath == "" {
		return
	}
	// The module and version the binary was built from (go install builds
	// report "dev build" to -version), so make test can check the pin.
	ver := "unknown"
	if bi, err := buildinfo.ReadFile(bin); err == nil {
		ver = bi.Main.Path + " " + bi.Main.Version
	}
	grpcurlLogMu.Lock()
	defer grpcurlLogMu.Unlock()
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%s\t%s\t%s\n", ver, bin, strings.Join(args, " "))
	_ = w.Flush()
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
