package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

// hubChildReport is what a hub child reports when its stdin closes.
type hubChildReport struct {
	IdleMiB float64 `json:"idle_rss_mib"` // VmRSS once started, before any push
	PeakMiB float64 `json:"peak_rss_mib"` // VmHWM
	RSSMiB  float64 `json:"rss_mib"`      // VmRSS at the end
}

// runHubChild is the -hub-child mode: a hub (bbolt store in a temp dir,
// no sinks) on 127.0.0.1 whose address is the first line printed; when
// stdin closes it prints its memory as JSON and exits. Its RSS is the
// hub's alone: the client's copy of the bytes is in the parent.
func runHubChild(in io.Reader, out io.Writer) error {
	ctx := context.Background()
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return err
	}
	defer e.close()
	idle := procStatusMiB("VmRSS")
	if _, err := fmt.Fprintln(out, e.conn.Target()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	return json.NewEncoder(out).Encode(hubChildReport{IdleMiB: idle, PeakMiB: procStatusMiB("VmHWM"), RSSMiB: procStatusMiB("VmRSS")})
}

// hubChild is a running -hub-child process.
type hubChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	conn  *grpc.ClientConn
}

func startHubChild(ctx context.Context) (*hubChild, error) {
	cmd, stdin, stdout, err := startSelf(ctx, "-hub-child")
	if err != nil {
		return nil, err
	}
	c := &hubChild{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	addr, err := c.out.ReadString('\n')
	if err != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		return nil, fmt.Errorf("hub child: %w", err)
	}
	c.conn, err = grpc.NewClient(strings.TrimSpace(addr), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)))
	if err != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		return nil, err
	}
	return c, nil
}

// finish closes the child's stdin and returns its report.
func (c *hubChild) finish() (hubChildReport, error) {
	var r hubChildReport
	_ = c.conn.Close()
	_ = c.stdin.Close()
	err := json.NewDecoder(c.out).Decode(&r)
	if werr := c.cmd.Wait(); err == nil && werr != nil {
		err = werr
	}
	return r, err
}

// uploadOnce uploads a config of size bytes to a fresh hub child and
// returns the ack time and the child's memory.
func uploadOnce(ctx context.Context, size int) (time.Duration, hubChildReport, error) {
	cfg := stamped(genConfig(size), 1)
	sum := config.Hash(cfg)
	c, err := startHubChild(ctx)
	if err != nil {
		return 0, hubChildReport{}, err
	}
	up := hubclient.New(c.conn, hubclient.WithUnaryLimit(0))
	d, err := timed(func() error { return uploadConfig(ctx, up, cfg, sum) })
	r, ferr := c.finish()
	if err == nil {
		err = ferr
	}
	return d, r, err
}

// uploadPeakRSS is scenario 1's memory row: the hub's peak RSS during one
// upload of size bytes, in its own process.
func uploadPeakRSS(ctx context.Context, size int, log func(string, ...any)) (Row, error) {
	d, r, err := uploadOnce(ctx, size)
	if err != nil {
		return Row{}, fmt.Errorf("upload to a hub child: %w", err)
	}
	mib := float64(size) / (1 << 20)
	log("  upload %.0f MiB to a hub child: ack %.0f ms, RSS idle %.1f MiB, peak %.1f MiB, after %.1f MiB", mib, ms(d), r.IdleMiB, r.PeakMiB, r.RSSMiB)
	return Row{Scenario: fmt.Sprintf("1 hub peak RSS during one %.0f MiB upload", mib), Unit: "MiB", Hub: r.PeakMiB,
		Baseline: mib, Ratio: r.PeakMiB / mib, Target: fmt.Sprintf("<= config + 64 MiB (%.0f MiB)", mib+64), OK: r.PeakMiB <= mib+64, Runs: 1,
		Note: fmt.Sprintf("hub alone in a child process (idle %.0f MiB, %.0f MiB after the ack); baseline column: the config size", r.IdleMiB, r.RSSMiB)}, nil
}
