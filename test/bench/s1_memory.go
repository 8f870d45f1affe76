package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

// Repeated uploads' memory: how many uploads, and how long the hub is
// left idle after the last before its idle RSS is read (the runtime
// returns freed memory to the OS over a few seconds).
const (
	repeatedUploads = 5
	idleSettle      = 10 * time.Second
	rssPoll         = 10 * time.Millisecond
)

// scenarioRepeatedUploads is scenario 1m: repeatedUploadRSS of
// -upload-mib.
// It runs the hub with its defaults, then with --memory-limit at the peak
// target, which makes the Go runtime collect the previous uploads'
// garbage before the heap passes it.
func scenarioRepeatedUploads(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	rows, err := repeatedUploadRSS(ctx, o, o.uploadMax, log)
	if err != nil {
		return nil, err
	}
	limit := fmt.Sprintf("%dMiB", 2*(o.uploadMax>>20)+64)
	limited, err := repeatedUploadRSS(ctx, o, o.uploadMax, log, "--memory-limit", limit)
	if err != nil {
		return nil, err
	}
	return append(rows, limited...), nil
}

// repeatedUploadRSS is scenario 1's steady-state memory rows: the shipped
// binary (go build ./cmd/confighub, its defaults: bbolt store in a temp
// data dir) as a child process, five consecutive uploads of distinct
// configurations of size bytes from this process, each into a hub that
// holds the previous one. Peak RSS is the child's VmHWM after the last
// ack (with VmRSS polled during the uploads, to say which upload reached
// it); idle RSS is its VmRSS idleSettle after the last ack.
func repeatedUploadRSS(ctx context.Context, o opts, size int, log func(string, ...any), hubArgs ...string) ([]Row, error) {
	dir, err := os.MkdirTemp("", "confighub-bench-uploads-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin, err := buildShipped(ctx, dir, o.hubBinary)
	if err != nil {
		return nil, err
	}
	h, err := startShipped(ctx, bin, dir+"/data", io.Discard, hubArgs...)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	pid := h.cmd.Process.Pid
	startRSS := procMiB(pid, "VmRSS")

	// The highest VmRSS seen, and during which upload.
	var (
		peakKiB  atomic.Uint64
		peakAt   atomic.Int32
		current  atomic.Int32
		stopPoll = make(chan struct{})
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		t := time.NewTicker(rssPoll)
		defer t.Stop()
		for {
			select {
			case <-stopPoll:
				return
			case <-t.C:
				if v := procMiB(pid, "VmRSS"); v > kibToMiB(peakKiB.Load()) {
					peakKiB.Store(mibToKiB(v))
					peakAt.Store(current.Load())
				}
			}
		}
	})
	up := hubclient.New(h.conn, hubclient.WithUnaryLimit(0))
	base := genConfig(size)
	acks := make([]time.Duration, 0, repeatedUploads)
	for i := 1; i <= repeatedUploads; i++ {
		current.Store(int32(i))
		cfg := stamped(base, i)
		sum := config.Hash(cfg)
		d, err := timed(func() error { return uploadConfig(ctx, up, cfg, sum) })
		if err != nil {
			close(stopPoll)
			wg.Wait()
			return nil, fmt.Errorf("upload %d of %d: %w", i, repeatedUploads, err)
		}
		acks = append(acks, d)
		log("  upload %d of %d (%d MiB): ack %.0f ms, hub RSS now %.0f MiB", i, repeatedUploads, size>>20, ms(d), procMiB(pid, "VmRSS"))
	}
	base = nil // the bench's own copies do not matter: the hub is another process
	select {
	case <-ctx.Done():
	case <-time.After(idleSettle):
	}
	close(stopPoll)
	wg.Wait()
	load := loadAvg()
	mib := float64(size) / (1 << 20)
	peak, idle := procMiB(pid, "VmHWM"), procMiB(pid, "VmRSS")
	peakTarget, idleTarget := 2*mib+64, mib+64
	with := "its defaults"
	if len(hubArgs) > 0 {
		with = strings.Join(hubArgs, " ")
	}
	log("  %d uploads of %.0f MiB into the shipped binary (%s): RSS at start %.0f MiB, peak %.0f MiB (VmHWM; polled peak %.0f MiB during upload %d), idle %.0f MiB %v after the last ack; load %s",
		repeatedUploads, mib, with, startRSS, peak, kibToMiB(peakKiB.Load()), peakAt.Load(), idle, idleSettle, load)
	note := fmt.Sprintf("shipped binary (bbolt, %s) in a child process, %d consecutive uploads of distinct %.0f MiB configs from the bench process, each into a hub holding the previous one; acks %s; RSS at start %.0f MiB; baseline column: the config size",
		with, repeatedUploads, mib, durationsMS(acks), startRSS)
	return []Row{
		{Scenario: fmt.Sprintf("1 hub peak RSS over %d uploads of %.0f MiB (shipped binary, %s)", repeatedUploads, mib, with), Unit: "MiB", Hub: peak, Baseline: mib, Ratio: peak / mib,
			Target: fmt.Sprintf("<= 2 x config + 64 MiB (%.0f MiB)", peakTarget), OK: peak <= peakTarget, Runs: 1, Load: load,
			Note: note + fmt.Sprintf("; VmRSS polled every %v peaked during or after upload %d", rssPoll, peakAt.Load())},
		{Scenario: fmt.Sprintf("1 hub idle RSS after the last of %d uploads of %.0f MiB (shipped binary, %s)", repeatedUploads, mib, with), Unit: "MiB", Hub: idle, Baseline: mib, Ratio: idle / mib,
			Target: fmt.Sprintf("<= config + 64 MiB (%.0f MiB)", idleTarget), OK: idle <= idleTarget, Runs: 1, Load: load,
			Note: fmt.Sprintf("VmRSS %v after the last ack, the hub idle", idleSettle)},
	}, nil
}

func mibToKiB(m float64) uint64 { return uint64(m * 1024) }
func kibToMiB(k uint64) float64 { return float64(k) / 1024 }

// durationsMS lists durations in whole milliseconds.
func durationsMS(ds []time.Duration) string {
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f ms", ms(d))
	}
	return s
}
