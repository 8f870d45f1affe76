package robustness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hubProc is the shipped hub binary run as a child process on fixed
// loopback ports, so clients reconnect to the same address after a kill.
type hubProc struct {
	bin  string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	tail []string // the last lines it printed, for a failure message
}

const tailLines = 40

// freePort is a loopback port nothing listens on right now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start runs the hub and waits until it logs that it serves.
func (h *hubProc) start(ctx context.Context) error {
	cmd := exec.Command(h.bin, h.args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", h.bin, err)
	}
	done := make(chan struct{})
	serving := make(chan struct{})
	h.mu.Lock()
	h.cmd, h.done = cmd, done
	h.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(done)
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		seen := false
		for sc.Scan() {
			line := sc.Text()
			h.mu.Lock()
			h.tail = append(h.tail, line)
			if len(h.tail) > tailLines {
				h.tail = h.tail[1:]
			}
			h.mu.Unlock()
			if !seen && strings.Contains(line, "confighub serving") {
				seen = true
				close(serving)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case <-serving:
		return nil
	case <-done:
		return fmt.Errorf("the hub exited before serving:\n%s", h.output())
	case <-t.C:
		h.kill()
		return fmt.Errorf("the hub did not serve within 60s:\n%s", h.output())
	case <-ctx.Done():
		h.kill()
		return ctx.Err()
	}
}

// kill sends SIGKILL and waits for the process to end.
func (h *hubProc) kill() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// pid is the running hub's process id (0 when none runs).
func (h *hubProc) pid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil || h.cmd.Process == nil {
		return 0
	}
	select {
	case <-h.done:
		return 0
	default:
	}
	return h.cmd.Process.Pid
}

func (h *hubProc) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.tail, "\n")
}
