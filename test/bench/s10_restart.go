package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store/bolt"
)

// restartLimit is the open-files limit the restarted hub runs under: a
// common default, far below one descriptor per stream.
const restartLimit = 1024

// scenarioRestart: a data dir holding N streams of one 5 KiB generation
// each (written through the bolt store, 32 writers), then the shipped
// binary started on it under ulimit -n 1024: the time until it logs
// "confighub serving" and answers GetConfig of the last stream, and its
// RSS then.
func scenarioRestart(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	dir, err := os.MkdirTemp("", "confighub-bench-restart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, err := buildShipped(ctx, dir, o.hubBinary)
	if err != nil {
		return nil, err
	}
	counts := []int{1000, 10000, 100000}
	if o.quick {
		counts = counts[:2]
	}
	var rows []Row
	for _, n := range counts {
		data := filepath.Join(dir, fmt.Sprint("data-", n))
		if err := populate(ctx, filepath.Join(data, "confighub.db"), n); err != nil {
			return nil, err
		}
		load := loadAvg()
		took, rss, anon, err := restartToServing(ctx, bin, data, fmt.Sprintf("st%06d", n-1))
		if err != nil {
			return nil, fmt.Errorf("%d streams: %w", n, err)
		}
		log("%d streams: serving after %.2fs, RSS %.0f MiB, of it anonymous %.0f MiB (load %s)", n, took.Seconds(), rss, anon, load)
		rows = append(rows,
			Row{Scenario: fmt.Sprintf("10 restart to serving, %d streams, ulimit -n %d", n, restartLimit), Unit: "s", Hub: took.Seconds(),
				Target: "serves", OK: true, Runs: 1, Load: load},
			Row{Scenario: fmt.Sprintf("10 RSS after restart, %d streams of 5 KiB", n), Unit: "MiB", Hub: rss, Info: true, Runs: 1, Load: load},
			Row{Scenario: fmt.Sprintf("10 anonymous RSS after restart, %d streams", n), Unit: "MiB", Hub: anon, Info: true, Runs: 1, Load: load})
		_ = os.RemoveAll(data)
	}
	return rows, nil
}

// populate commits one 5 KiB generation to each of n streams.
func populate(ctx context.Context, path string, n int) error {
	s, err := bolt.Open(path)
	if err != nil {
		return err
	}
	base := benchCfg(5 << 10)
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				raw := append([]byte(nil), base...)
				copy(raw[len(raw)-25:], fmt.Sprintf("%020d", i))
				c := config.New(fmt.Sprintf("st%06d", i), 0, config.Hash(raw), config.FormatJSON, raw, nil, nil, time.Now())
				if _, _, err := s.CommitConfig(ctx, c, 0); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(first, ctx.Err(), s.Close())
}

// benchCfg is a valid JSON configuration of about n bytes ending in a tag
// of 20 digits, 5 bytes before its end (`"]}]}`).
func benchCfg(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for b.Len() < n-80 {
		b.WriteString(`{"name":"svc","host":"upstream.example.svc","port":8080},`)
	}
	b.WriteString(`{"name":"last","host":"h","tags":["00000000000000000000"]}]}`)
	return []byte(b.String())
}

// restartToServing starts bin on data under ulimit -n restartLimit and
// returns the time until it serves and answers GetConfig of stream, and
// its RSS then (all of it, and the anonymous part: the rest is pages of
// the store file mapped by bbolt, which the kernel can drop).
func restartToServing(ctx context.Context, bin, data, stream string) (took time.Duration, rss, anon float64, err error) {
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, restartLimit), bin,
		"--data-dir", data, "--listen", "127.0.0.1:0", "--metrics-listen", "")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		waitOrKill(cmd)
	}()
	sc := bufio.NewScanner(stderr)
	var addr string
	var tail []string
	for addr == "" && sc.Scan() {
		line := sc.Text()
		tail = append(tail, line)
		if strings.Contains(line, `msg="confighub serving"`) {
			addr = logField(line, "listen")
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if addr == "" {
		return 0, 0, 0, fmt.Errorf("confighub did not serve: %s", strings.Join(tail, "\n"))
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg)))
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close()
	if _, err := confighubv1.NewConfigHubServiceClient(conn).GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: stream}); err != nil {
		return 0, 0, 0, fmt.Errorf("GetConfig(%s) after the restart: %w", stream, err)
	}
	took = time.Since(t0)
	return took, procMiB(cmd.Process.Pid, "VmRSS"), procMiB(cmd.Process.Pid, "RssAnon"), nil
}
