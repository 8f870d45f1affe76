package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

// shippedHub is the confighub binary a user runs, started with its
// defaults (bbolt store) on loopback ports it picks itself.
type shippedHub struct {
	cmd     *exec.Cmd
	grpc    string // gRPC address
	metrics string // metrics listener address
	conn    *grpc.ClientConn
	client  *hubclient.Client
}

// buildShipped builds ./cmd/confighub into dir, unless bin names a binary.
func buildShipped(ctx context.Context, dir, bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	out := filepath.Join(dir, "confighub")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/confighub/confighub/cmd/confighub")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build cmd/confighub (run the bench from the repository, or pass -hub-binary): %w", err)
	}
	return out, nil
}

// startShipped starts bin on dataDir with its defaults and args.
func startShipped(ctx context.Context, bin, dataDir string, logTo io.Writer, args ...string) (*shippedHub, error) {
	h := &shippedHub{cmd: exec.CommandContext(ctx, bin, append([]string{"--data-dir", dataDir,
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...)...)}
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	// The addresses are in the start-up log lines.
	sc := bufio.NewScanner(stderr)
	for (h.grpc == "" || h.metrics == "") && sc.Scan() {
		line := sc.Text()
		addr := logField(line, "listen")
		switch {
		case strings.Contains(line, `msg="confighub serving"`):
			h.grpc = addr
		case strings.Contains(line, `msg="metrics serving"`):
			h.metrics = addr
		}
	}
	go func() { _, _ = io.Copy(logTo, stderr) }()
	if h.grpc == "" || h.metrics == "" {
		h.stop()
		return nil, errors.New("confighub did not print its listen addresses")
	}
	h.conn, err = grpc.NewClient(h.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)))
	if err != nil {
		h.stop()
		return nil, err
	}
	h.client = hubclient.New(h.conn)
	return h, nil
}

// logField is the value of key=value in a text log line.
func logField(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

func (h *shippedHub) stop() {
	if h.conn != nil {
		_ = h.conn.Close()
	}
	_ = h.cmd.Process.Signal(os.Interrupt)
	waitOrKill(h.cmd)
}

// procMiB reads a kB field of /proc/<pid>/status.
func procMiB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return statusField(string(b), field)
}

// metricMiB is a gauge of the hub's /metrics, in MiB.
func (h *shippedHub) metricMiB(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.metrics+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f / (1 << 20), err
		}
	}
	return 0, fmt.Errorf("%s not in /metrics", name)
}

// fleetMemory is scenario 2's memory rows: the shipped confighub binary
// (its defaults, bbolt store) with 1,000 kong sinks over gRPC, one 10 MiB
// config pushed and applied by all; RSS read from /proc once every sink
// reported it applied.
func fleetMemory(ctx context.Context, o opts, fl *fleet, log func(string, ...any)) ([]Row, error) {
	dir, err := os.MkdirTemp("", "confighub-bench-mem-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, err := buildShipped(ctx, dir, o.hubBinary)
	if err != nil {
		return nil, err
	}
	logTo := io.Discard
	if o.verbose {
		logTo = os.Stderr
	}
	h, err := startShipped(ctx, bin, filepath.Join(dir, "data"), logTo)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	pid := h.cmd.Process.Pid
	idle := procMiB(pid, "VmRSS")
	for i, u := range fl.urls {
		if _, err := h.client.Admin.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: kongSpec(fmt.Sprintf("gw-%04d", i), u)}); err != nil {
			return nil, fmt.Errorf("put sink %d: %w", i, err)
		}
	}
	cfg := stamped(genConfig(10<<20), 777)
	size := len(cfg)
	t0 := time.Now()
	res, err := h.client.Push(ctx, hubclient.Push{Config: cfg, Format: confighubv1.Format_FORMAT_JSON})
	if err != nil {
		return nil, err
	}
	cfg = nil
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	r, err := h.client.Wait(wctx, config.DefaultStream, res.GetGeneration())
	if err != nil {
		return nil, fmt.Errorf("wait for %d sinks: %w", len(fl.urls), err)
	}
	apply := time.Since(t0)
	rss, peak := procMiB(pid, "VmRSS"), procMiB(pid, "VmHWM")
	heap, err := h.metricMiB(ctx, "go_memstats_heap_inuse_bytes")
	if err != nil {
		return nil, err
	}
	log("  memory (shipped binary): %d sinks (%d applied), %.0f MiB config: RSS idle %.1f MiB, after %.1f MiB (peak %.1f MiB), heap in use %.1f MiB, applied in %.0f ms",
		len(fl.urls), len(r.Sinks), float64(size)/(1<<20), idle, rss, peak, heap, ms(apply))
	what := fmt.Sprintf("%d sinks, 10 MiB config", len(fl.urls))
	return []Row{
		{Scenario: "2 hub RSS (shipped binary), " + what, Unit: "MiB", Hub: rss, Target: "<= 150 MiB", OK: rss <= 150, Runs: 1,
			Note: fmt.Sprintf("cmd/confighub with its defaults (bbolt), sinks put and the config pushed over gRPC, gateways in another process; idle %.0f MiB", idle)},
		{Scenario: "2 hub peak RSS (shipped binary), " + what, Unit: "MiB", Hub: peak, Target: "-", OK: true, Runs: 1, Info: true},
		{Scenario: "2 hub heap in use (shipped binary), " + what, Unit: "MiB", Hub: heap, Target: "-", OK: true, Runs: 1, Info: true},
	}, nil
}
