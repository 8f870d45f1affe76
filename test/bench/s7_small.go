package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/test/bench/rawack"
)

const (
	smallSize    = 5 << 10
	smallClients = 32
	smallStreams = 16
	smallWarm    = 1 // rounds not kept
)

// scenarioSmall: scenario 7. 5 KiB pushes from 32 concurrent clients in
// another process (this binary in -push-child mode), all on one stream,
// then spread over 16 streams, against a server that pwrites each push
// into a preallocated file and fdatasyncs it before it answers (rawack
// with a file), from the same clients in the same run. Beside them, the
// same clients push the same bytes to a server that answers at once
// (rawack with no file): the ceiling, the transport alone. Each server has
// one connection from the clients.
func scenarioSmall(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer e.close()
	f, err := rawack.Preallocate(filepath.Join(e.dir, "fsync.rec"), 64<<10)
	if err != nil {
		return nil, err
	}
	fsync, err := serveRaw(f)
	if err != nil {
		return nil, err
	}
	defer fsync.close()
	ceil, err := startAnswerOnly()
	if err != nil {
		return nil, err
	}
	defer ceil.close()
	pc, err := startPushChild(ctx)
	if err != nil {
		return nil, err
	}
	defer pc.close()

	// cpu[k] holds the CPU time per push of each round of fns[k] (the
	// fsync server, one stream, 16 streams, the ceiling), the server's
	// process and the clients' together, the warm-up's first.
	cpu := make([][]time.Duration, 4)
	round := func(k int, r pushRound) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			r.Span = o.smallSpan
			c0 := cpuTime()
			res, err := pc.run(r)
			if err != nil {
				return 0, err
			}
			cpu[k] = append(cpu[k], perOp(cpuTime()-c0+res.CPU, res.N))
			return perOp(res.Elapsed, res.N), nil
		}
	}
	hubAddr := e.conn.Target()
	t, load, err := o.interleaved(7, smallWarm, o.smallRounds,
		round(0, pushRound{Kind: "raw", Addr: fsync.conn.Target()}),
		round(1, pushRound{Kind: "hub", Addr: hubAddr, Streams: 1}),
		round(2, pushRound{Kind: "hub", Addr: hubAddr, Streams: smallStreams}),
		round(3, pushRound{Kind: "raw", Addr: ceil.conn.Target()}))
	if err != nil {
		return nil, err
	}
	rate := func(d []time.Duration) float64 { return 1000 / medianMS(d) }
	log("  5 KiB: fdatasync server %.0f/s, 1 stream %.0f/s, %d streams %.0f/s, answer-only server %.0f/s, load %s", rate(t[0]), rate(t[1]), smallStreams, rate(t[2]), rate(t[3]), load)
	row := func(name string, d, base []time.Duration) Row {
		r := Row{Scenario: name, Unit: "/s", Hub: rate(d), Baseline: rate(base), Runs: o.smallRounds,
			Target: "ratio >= 1 (x a server that pwrites + fdatasyncs each push)"}
		r.Ratio = r.Hub / r.Baseline
		r.OK = r.Ratio >= 1
		r.withSpread(d, base, load)
		r.HubSpread, r.BaseSpread = rateSpread(d), rateSpread(base)
		return r
	}
	// cpuBound says how much CPU one push of fns[k] took and the rate
	// that alone allows on this machine's cores.
	cpuBound := func(k int) string {
		us := medianMS(cpu[k][smallWarm:]) * 1000
		most := float64(runtime.NumCPU()) * 1e6 / us
		return fmt.Sprintf("CPU per push (server and clients' processes, user+system, median of the rounds) %.0f us, so at most %.0f/s on %d cores",
			us, most, runtime.NumCPU())
	}
	rows := []Row{
		row(fmt.Sprintf("7 5 KiB pushes acked/s, %d clients, one stream", smallClients), t[1], t[0]),
		row(fmt.Sprintf("7 5 KiB pushes acked/s, %d clients, %d streams", smallClients, smallStreams), t[2], t[0]),
	}
	rows[0].Note = fmt.Sprintf("clients in another process; rounds of %v each, interleaved in random order with the fdatasync server (rawack: one pwrite + fdatasync per push, then the answer) and the answer-only server; %s", o.smallSpan, cpuBound(1))
	rows[1].Note = cpuBound(2)
	c := row(fmt.Sprintf("7 5 KiB pushes acked/s, %d clients, one stream, vs a server that only answers", smallClients), t[1], t[3])
	c.Info, c.OK, c.Target = true, true, "-"
	c.Note = "the ceiling: the same clients and bytes to a gRPC server with no interceptors and only message-size limits set (rawack, no file) that answers at once; " + cpuBound(3)
	return append(rows, c), nil
}

// pushRound is one round of scenario 7's clients: Kind "hub" pushes
// PushConfig to the hub at Addr (over Streams streams), "raw" rawack's
// Push to the server at Addr, for Span.
type pushRound struct {
	Kind    string
	Addr    string
	Streams int
	Span    time.Duration
}

// pushResult is what the clients did in a round: N pushes in Elapsed,
// using CPU in their process.
type pushResult struct {
	N       int
	Elapsed time.Duration
	CPU     time.Duration
	Err     string
}

// pushChild is this binary in -push-child mode: scenario 7's clients.
type pushChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func startPushChild(ctx context.Context) (*pushChild, error) {
	cmd, in, out, err := startSelf(ctx, "-push-child")
	if err != nil {
		return nil, err
	}
	return &pushChild{cmd: cmd, in: in, out: json.NewDecoder(out)}, nil
}

func (c *pushChild) run(r pushRound) (pushResult, error) {
	var res pushResult
	if err := json.NewEncoder(c.in).Encode(r); err != nil {
		return res, err
	}
	if err := c.out.Decode(&res); err != nil {
		return res, err
	}
	if res.Err != "" {
		return res, errors.New(res.Err)
	}
	return res, nil
}

func (c *pushChild) close() {
	_ = c.in.Close()
	waitOrKill(c.cmd)
}

// runPushChild is the -push-child mode: for each round read from in (one
// JSON pushRound), smallClients goroutines push distinct 5 KiB configs in
// a loop over one connection per address for the round's span; the result
// goes to out as one JSON pushResult. It returns when in closes.
func runPushChild(in io.Reader, out io.Writer) error {
	ctx := context.Background()
	conns := map[string]*grpc.ClientConn{}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	base := genConfig(smallSize)
	var stamp atomic.Int64
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	for {
		var r pushRound
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		conn := conns[r.Addr]
		if conn == nil {
			var err error
			if conn, err = grpc.NewClient(r.Addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
				return err
			}
			conns[r.Addr] = conn
		}
		hc := confighubv1.NewConfigHubServiceClient(conn)
		push := func(c int, cfg []byte) error { return rawack.Push(ctx, conn, cfg) }
		if r.Kind == "hub" {
			push = func(c int, cfg []byte) error {
				stream := ""
				if r.Streams > 1 {
					stream = fmt.Sprintf("small-%02d", c%r.Streams)
				}
				_, err := hc.PushConfig(ctx, &confighubv1.PushConfigRequest{Stream: stream, Config: cfg, Format: confighubv1.Format_FORMAT_JSON})
				return err
			}
		}
		var n atomic.Int64
		var mu sync.Mutex
		var failed error
		var wg sync.WaitGroup
		c0 := cpuTime()
		t0 := time.Now()
		for c := range smallClients {
			wg.Go(func() {
				for time.Since(t0) < r.Span {
					if err := push(c, stamped(base, int(stamp.Add(1)))); err != nil {
						mu.Lock()
						failed = errors.Join(failed, err)
						mu.Unlock()
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		res := pushResult{N: int(n.Load()), Elapsed: time.Since(t0), CPU: cpuTime() - c0}
		if failed != nil {
			res.Err = failed.Error()
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
}

// perOp is the time per operation of n operations in d (d when n is 0).
func perOp(d time.Duration, n int) time.Duration {
	if n == 0 {
		return d
	}
	return d / time.Duration(n)
}

// rateSpread is the p10-p90 of per-operation times as rates per second
// (the slow end first).
func rateSpread(d []time.Duration) string {
	if len(d) < 2 {
		return ""
	}
	return fmt.Sprintf("%.0f-%.0f/s", 1000/quantileMS(d, 0.9), 1000/quantileMS(d, 0.1))
}
