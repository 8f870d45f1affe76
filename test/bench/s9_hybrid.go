package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/test/harness"
	"github.com/confighub/confighub/test/kongemu/dataplane"
)

// scenarioHybrid: scenario 9, Kong data planes in hybrid mode. N emulated
// data planes (test/kongemu/dataplane, in a child process) connect over
// TLS on loopback to the confighub binary's cluster listener; another N in
// a second child connect to the baseline, a plain loop that writes the
// same compressed frame to each of its N WebSocket connections. Interleaved
// samples time a 1 MiB push from its ack (the baseline: from the start of
// its loop) until every data plane pinged the new hash. Also: the hub's
// RSS idle and at its peak, compressions per generation (from the hub's
// log), the compression ratio over testdata/kic-golden, and the time for
// the N data planes to reconnect and run the current generation after a
// hub restart.
func scenarioHybrid(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	n := o.dataPlanes
	_ = os.Remove(hubLogPath())
	log("the hub's log: %s", hubLogPath())
	dir, err := os.MkdirTemp("", "confighub-bench-hybrid-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	certPEM, keyPEM, err := hybrid.GenerateClusterCert(time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certFile, keyFile := filepath.Join(dir, "cluster.crt"), filepath.Join(dir, "cluster.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	bin, err := buildShipped(ctx, dir, o.hubBinary)
	if err != nil {
		return nil, err
	}
	clusterAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	// The Go runtime's soft limit keeps the garbage collector's headroom
	// (by default as much again as the live heap) within the RSS target;
	// docs/hybrid.md says what a data plane costs.
	hubArgs := []string{"--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--cluster-listen", clusterAddr, "--cluster-cert", certFile, "--cluster-cert-key", keyFile, "--memory-limit", hybridMemoryLimit}
	hub, err := startHybridHub(ctx, bin, hubArgs)
	if err != nil {
		return nil, err
	}
	defer func() { hub.stop() }()
	base, err := startBaseline(pair)
	if err != nil {
		return nil, err
	}
	defer base.close()

	log("starting %d emulated data planes against the hub and %d against the baseline", n, n)
	hubDPs, err := startDPChild(ctx, clusterAddr, certFile, keyFile, n, "hub-dp-")
	if err != nil {
		return nil, err
	}
	defer hubDPs.close()
	baseDPs, err := startDPChild(ctx, base.addr, certFile, keyFile, n, "base-dp-")
	if err != nil {
		return nil, err
	}
	defer baseDPs.close()
	if _, err := hubDPs.ask("connects 1"); err != nil {
		return nil, err
	}
	if _, err := baseDPs.ask("connects 1"); err != nil {
		return nil, err
	}
	for base.count() < n {
		time.Sleep(50 * time.Millisecond) // the baseline registers after basic_info
	}
	log("all connected; idle RSS sample")

	cfg0 := genConfig(1 << 20)
	stamp := 0
	next := func() []byte { stamp++; return stamped(cfg0, stamp) }
	// A first push, so every sink is at a generation and idle.
	if _, err := hub.pushAndWait(ctx, hubDPs, next()); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	idle := procMiB(hub.cmd.Process.Pid, "VmRSS")
	load := loadAvg()
	// The peak row is the pushes' own: the high-water mark restarts here
	// (5 to clear_refs resets VmHWM), not at the connections' handshakes.
	peakFrom := "the pushes"
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", hub.cmd.Process.Pid), []byte("5"), 0); err != nil {
		peakFrom = "the hub's start (VmHWM not reset: " + err.Error() + ")"
	}
	const samples = 3
	var hubT, baseT []time.Duration
	for i := 0; i < samples; i++ {
		d, err := hub.pushAndWait(ctx, hubDPs, next())
		if err != nil {
			return nil, err
		}
		hubT = append(hubT, d)
		raw := next()
		cfg := config.New("default", uint64(stamp), config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Now())
		gz, _, err := hybrid.Reconfigure(cfg)
		if err != nil {
			return nil, err
		}
		b, err := base.pushAndWait(baseDPs, gz, hybrid.ConfigHash(cfg))
		if err != nil {
			return nil, err
		}
		baseT = append(baseT, b)
		log("sample %d: hub %s, baseline %s", i+1, d.Round(time.Millisecond), b.Round(time.Millisecond))
	}
	peak := procMiB(hub.cmd.Process.Pid, "VmHWM")
	builds := hub.frameBuilds()
	gens := stamp - samples // the hub's pushes: the first and one per sample
	perGen := float64(builds) / float64(gens)
	ratio, err := goldenRatio()
	if err != nil {
		return nil, err
	}

	rows := []Row{}
	hm, bm := medianMS(hubT), medianMS(baseT)
	r := Row{Scenario: fmt.Sprintf("9 hybrid: %d DPs, 1 MiB push, ack to every DP's ping", n), Unit: "ms", Hub: hm, Baseline: bm, Ratio: hm / bm,
		Target: "<= 1.2x", OK: hm/bm <= 1.2, Runs: samples, Note: "baseline: one loop writing the same compressed frame to as many WebSocket connections"}
	r.withSpread(hubT, baseT, load)
	rows = append(rows, r,
		Row{Scenario: fmt.Sprintf("9 hybrid: hub RSS, %d DPs idle (--memory-limit %s)", n, hybridMemoryLimit), Unit: "MiB", Hub: idle, Target: "<= 300 MiB", OK: idle <= 300, Runs: 1, Load: load},
		Row{Scenario: fmt.Sprintf("9 hybrid: hub peak RSS, %d DPs, since %s", n, peakFrom), Unit: "MiB", Hub: peak, Target: "<= 400 MiB", OK: peak <= 400, Runs: 1, Load: load},
		Row{Scenario: "9 hybrid: compressions per generation", Unit: "count", Hub: perGen, Target: "1", OK: perGen == 1, Runs: gens},
		Row{Scenario: "9 hybrid: compression ratio over testdata/kic-golden (raw/gzip'd)", Unit: "x", Hub: math.Round(ratio*100) / 100, Info: true, OK: true, Runs: 1},
	)

	// A restart: the time until every data plane reconnected and runs the
	// current generation (Kong's data planes wait 5 to 10 s to redial).
	hub.stop()
	restartAt := time.Now()
	hub, err = startHybridHub(ctx, bin, hubArgs)
	if err != nil {
		return nil, err
	}
	if _, err := hubDPs.ask("connects 2"); err != nil {
		return nil, err
	}
	reconnect := time.Since(restartAt)
	rows = append(rows, Row{Scenario: fmt.Sprintf("9 hybrid: %d DPs reconnected after a hub restart (they redial after 5-10 s)", n), Unit: "ms",
		Hub: float64(reconnect.Milliseconds()), Info: true, OK: true, Runs: 1, Load: loadAvg()})
	return rows, nil
}

// hybridMemoryLimit is the hub's --memory-limit in scenario 9.
const hybridMemoryLimit = "256MiB"

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// goldenRatio is the total size of the reconfigure messages of the
// kic-golden fixtures over their gzip'd size.
func goldenRatio() (float64, error) {
	files, err := filepath.Glob(filepath.Join(harness.RepoRoot(), harness.FixturesSubdir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("testdata/kic-golden: no fixtures (%v)", err)
	}
	var raw, gz int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		cfg := config.New("default", 1, config.Hash(b), config.FormatYAML, b, nil, nil, time.Now())
		z, n, err := hybrid.Reconfigure(cfg)
		if err != nil {
			return 0, err
		}
		raw += n
		gz += len(z)
	}
	return float64(raw) / float64(gz), nil
}

// hybridHub is the confighub binary with a cluster listener.
type hybridHub struct {
	cmd    *exec.Cmd
	conn   *grpc.ClientConn
	api    confighubv1.ConfigHubServiceClient
	builds atomic.Int64
	done   chan struct{}
}

func startHybridHub(ctx context.Context, bin string, args []string) (*hybridHub, error) {
	h := &hybridHub{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
	logf, err := os.OpenFile(hubLogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		defer close(h.done)
		defer logf.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			switch {
			case strings.Contains(line, `msg="confighub serving"`):
				addr <- logField(line, "listen")
			case strings.Contains(line, `msg="reconfigure frame built"`):
				h.builds.Add(1)
			case strings.Contains(line, "level=ERROR"):
				fmt.Fprintln(os.Stderr, "hub:", line)
			}
		}
	}()
	select {
	case a := <-addr:
		h.conn, err = grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)))
		if err != nil {
			h.stop()
			return nil, err
		}
		h.api = confighubv1.NewConfigHubServiceClient(h.conn)
		return h, nil
	case <-h.done:
		return nil, errors.New("confighub exited before serving")
	case <-time.After(60 * time.Second):
		h.stop()
		return nil, errors.New("confighub did not print its listen address")
	}
}

// hubLogPath is where scenario 9 keeps the hub's log.
func hubLogPath() string { return filepath.Join(os.TempDir(), "confighub-bench-hybrid-hub.log") }

func (h *hybridHub) frameBuilds() int { return int(h.builds.Load()) }

func (h *hybridHub) stop() {
	if h.conn != nil {
		_ = h.conn.Close()
	}
	_ = h.cmd.Process.Signal(os.Interrupt)
	waitOrKill(h.cmd)
	<-h.done
}

// pushAndWait pushes raw and returns the time from its ack until every
// data plane of dps runs it.
func (h *hybridHub) pushAndWait(ctx context.Context, dps *dpChild, raw []byte) (time.Duration, error) {
	hash := hybrid.ConfigHash(&config.Config{Hash: config.Hash(raw)})
	if _, err := dps.send("expect " + hash); err != nil {
		return 0, err
	}
	if _, err := h.api.PushConfig(ctx, &confighubv1.PushConfigRequest{Config: raw}); err != nil {
		return 0, err
	}
	ack := time.Now()
	done, err := dps.ask("wait")
	if err != nil {
		return 0, err
	}
	return done.Sub(ack), nil
}

// baseline is the plain loop: a TLS WebSocket server that keeps every data
// plane's connection after its basic_info, answers pings, and writes one
// prepared frame to every connection in turn (and the current one to a
// connection as it comes, as the hub does).
type baseline struct {
	addr string
	lis  net.Listener
	srv  *http.Server
	mu   sync.Mutex
	cons []*websocket.Conn
	cur  *websocket.PreparedMessage
}

func startBaseline(cert tls.Certificate) (*baseline, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &baseline{addr: lis.Addr().String(), lis: lis}
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, WriteBufferPool: &sync.Pool{}}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadLimit(16 << 20)
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
		c.SetPingHandler(func(string) error {
			return c.WriteControl(websocket.PongMessage, nil, time.Now().Add(10*time.Second))
		})
		b.mu.Lock() // held while writing: the loop writes to c only once it is listed
		b.cons = append(b.cons, c)
		if b.cur != nil {
			_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_ = c.WritePreparedMessage(b.cur)
		}
		b.mu.Unlock()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}), TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12}
	go func() { _ = b.srv.Serve(tls.NewListener(lis, tc)) }()
	return b, nil
}

func (b *baseline) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.cons)
}

func (b *baseline) pushAndWait(dps *dpChild, gz []byte, hash string) (time.Duration, error) {
	if _, err := dps.send("expect " + hash); err != nil {
		return 0, err
	}
	pm, err := websocket.NewPreparedMessage(websocket.BinaryMessage, gz)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	cons := append([]*websocket.Conn(nil), b.cons...)
	b.cur = pm
	b.mu.Unlock()
	start := time.Now()
	for _, c := range cons {
		_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_ = c.WritePreparedMessage(pm)
	}
	done, err := dps.ask("wait")
	if err != nil {
		return 0, err
	}
	return done.Sub(start), nil
}

func (b *baseline) close() {
	_ = b.srv.Close()
	b.mu.Lock()
	for _, c := range b.cons {
		_ = c.Close()
	}
	b.mu.Unlock()
}

// dpChild is this binary in -dp-child mode: N emulated data planes.
type dpChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startDPChild(ctx context.Context, addr, cert, key string, n int, prefix string) (*dpChild, error) {
	cmd, in, out, err := startSelf(ctx, "-dp-child", addr, "-dp-cert", cert, "-dp-key", key, "-data-planes", strconv.Itoa(n), "-dp-prefix", prefix)
	if err != nil {
		return nil, err
	}
	return &dpChild{cmd: cmd, in: in, out: bufio.NewScanner(out)}, nil
}

func (c *dpChild) send(cmd string) (string, error) {
	_, err := fmt.Fprintln(c.in, cmd)
	return "", err
}

// ask sends cmd and returns the time the child answered with.
func (c *dpChild) ask(cmd string) (time.Time, error) {
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		return time.Time{}, err
	}
	if !c.out.Scan() {
		return time.Time{}, fmt.Errorf("dp child: no answer to %q", cmd)
	}
	ns, err := strconv.ParseInt(strings.TrimPrefix(c.out.Text(), "done "), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("dp child: %q", c.out.Text())
	}
	return time.Unix(0, ns), nil
}

func (c *dpChild) close() {
	_ = c.in.Close()
	waitOrKill(c.cmd)
}

// runDPChild serves -dp-child: n emulated data planes dialling addr. On
// stdin: "connects K" answers once every one connected K times; "expect
// HASH" then "wait" answers once every one runs HASH. Answers are "done
// UNIXNANO", the time the last one got there, or "failed ..." when some did
// not within 3 minutes.
func runDPChild(addr, certFile, keyFile, prefix string, n int, in io.Reader, out io.Writer) error {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	shared := dataplane.NewShared()
	dps := make([]*dataplane.DP, n)
	for i := range dps {
		dps[i] = dataplane.Start(dataplane.Options{Addr: addr, Cert: pair, NodeID: fmt.Sprintf("%s%d", prefix, i), Shared: shared})
		if i%100 == 99 {
			// A fleet that starts does not dial all at once: each hundred
			// connects before the next starts (at most a minute).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			for _, d := range dps[i-99 : i+1] {
				_ = d.WaitConnects(ctx, 1)
			}
			cancel()
		}
	}
	defer func() {
		for _, d := range dps {
			d.Stop()
		}
	}()
	all := func(f func(*dataplane.DP) error) string {
		var wg sync.WaitGroup
		var last atomic.Int64
		var failed atomic.Int64
		for _, d := range dps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if f(d) != nil {
					failed.Add(1)
					return
				}
				{
					for now := time.Now().UnixNano(); ; {
						cur := last.Load()
						if now <= cur || last.CompareAndSwap(cur, now) {
							break
						}
					}
				}
			}()
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			return fmt.Sprintf("failed %d of %d data planes did not get there", n, len(dps))
		}
		return fmt.Sprintf("done %d", last.Load())
	}
	ctx := context.Background()
	expect := ""
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		switch cmd {
		case "connects":
			k, _ := strconv.Atoi(arg)
			fmt.Fprintln(out, all(func(d *dataplane.DP) error { return d.WaitConnects(wctx, k) }))
		case "expect":
			expect = arg
		case "wait":
			fmt.Fprintln(out, all(func(d *dataplane.DP) error { return d.WaitHash(wctx, expect) }))
		}
		cancel()
	}
	return nil
}
