package etcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Process is an etcd server run as its own process from a binary (Debian's
// etcd-server package: /usr/bin/etcd), with the same Stop and Restart as
// the embedded Server, plus Pause and Resume (SIGSTOP and SIGCONT: etcd
// hangs without closing its connections, as a partitioned etcd does).
type Process struct {
	t         testing.TB
	bin       string
	dir       string
	clientURL string
	peerURL   string
	cmd       *exec.Cmd
	done      chan struct{}
}

// StartProcess runs bin as a single-member etcd on loopback ports in a temp
// dir until the test ends, and waits until it answers.
func StartProcess(t testing.TB, bin string) *Process {
	t.Helper()
	c, p := freeURL(t), freeURL(t)
	s := &Process{t: t, bin: bin, dir: t.TempDir(), clientURL: c.String(), peerURL: p.String()}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Endpoints are the client URLs.
func (s *Process) Endpoints() []string { return []string{s.clientURL} }

func (s *Process) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin,
		"--name", "etcdtest", "--data-dir", s.dir,
		"--listen-client-urls", s.clientURL, "--advertise-client-urls", s.clientURL,
		"--listen-peer-urls", s.peerURL, "--initial-advertise-peer-urls", s.peerURL,
		"--initial-cluster", "etcdtest="+s.peerURL, "--log-level", "error")
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("etcdtest: start %s: %v", s.bin, err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	s.waitReady()
}

// waitReady waits (bounded) until the client port accepts connections.
func (s *Process) waitReady() {
	s.t.Helper()
	host := s.clientURL[len("http://"):]
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("etcdtest: %s exited before serving", s.bin)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("etcdtest: %s does not serve on %s: %v", s.bin, host, err)
		}
	}
}

// Stop ends the process (SIGTERM, then SIGKILL after 10 s); its data stays.
func (s *Process) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused etcd cannot act on SIGTERM
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart starts the stopped member again on the same dir and ports.
func (s *Process) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Pause freezes the process (SIGSTOP): its connections stay open, nothing
// answers.
func (s *Process) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Process) Resume() { s.signal(syscall.SIGCONT) }

func (s *Process) signal(sig os.Signal) {
	if s.cmd == nil {
		s.t.Fatalf("etcdtest: signal %v: not running", sig)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("etcdtest: signal %v: %v", sig, err)
	}
}

// String names the binary and endpoint (for logs).
func (s *Process) String() string { return fmt.Sprintf("%s on %s", s.bin, s.clientURL) }
