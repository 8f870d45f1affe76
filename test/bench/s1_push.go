package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/bench/rawack"
)

// rawBaseline serves rawack's minimal durable ack, the baseline of
// scenario 1 (and 8): the least work a durable ack of the same bytes can do.
type rawBaseline struct {
	f    *os.File
	conn *grpc.ClientConn
	stop func() error
}

// startRaw serves the baseline on 127.0.0.1 with a file of capacity bytes
// preallocated in dir.
func startRaw(dir string, capacity int) (*rawBaseline, error) {
	f, err := rawack.Preallocate(filepath.Join(dir, "raw.json"), capacity)
	if err != nil {
		return nil, err
	}
	return serveRaw(f)
}

// startAnswerOnly serves rawack with no file: a server that answers each
// call at once, so its rate is the transport's ceiling.
func startAnswerOnly() (*rawBaseline, error) { return serveRaw(nil) }

// serveRaw serves rawack writing into f (nil: answer only), and closes f
// if it cannot.
func serveRaw(f *os.File) (*rawBaseline, error) {
	conn, stop, err := rawack.Serve(f, maxMsg)
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		return nil, err
	}
	return &rawBaseline{f: f, conn: conn, stop: stop}, nil
}

func (r *rawBaseline) push(ctx context.Context, b []byte) error {
	return rawack.Push(ctx, r.conn, b)
}

// upload streams b in chunks of hubclient.DefaultChunkBytes, as the hub's
// upload does.
func (r *rawBaseline) upload(ctx context.Context, b []byte) error {
	return rawack.Upload(ctx, r.conn, b, hubclient.DefaultChunkBytes)
}

func (r *rawBaseline) close() {
	reportServeErr(r.stop())
	if r.f != nil {
		_ = r.f.Close()
	}
}

// uploadConfig sends b by UploadConfig (c uploads every push) with its hash
// computed beforehand: what the hub does from the header to the ack, where
// a Push without Hash would also hash the bytes on the client first.
func uploadConfig(ctx context.Context, c *hubclient.Client, b []byte, sum string) error {
	_, err := c.Push(ctx, hubclient.Push{Config: b, Format: confighubv1.Format_FORMAT_JSON, Hash: sum})
	return err
}

// Warm-up rounds of scenario 1's pushes and uploads (not kept).
const (
	pushWarm   = 2
	uploadWarm = 1
)

// scenarioPushAck: scenario 1. Push ack (unary PushConfig) of 1 and 20 MiB
// and upload ack (UploadConfig) of 20 and 200 MiB, each against the raw
// baseline doing the least durable work with the same bytes, interleaved
// in random order.
func scenarioPushAck(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return nil, err
	}
	defer e.close()
	raw, err := startRaw(e.dir, o.uploadMax)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	rng := rand.New(rand.NewPCG(uint64(o.startTime.UnixNano()), 1))
	stamp := 0
	next := func(base []byte) []byte { stamp++; return stamped(base, stamp) }

	var rows []Row
	for _, size := range []int{1 << 20, 20 << 20} {
		base := genConfig(size)
		var hubCPU, rawCPU []time.Duration
		hub := func() (time.Duration, error) {
			cfg := next(base)
			return cpuTimed(&hubCPU, func() error { _, err := e.push(ctx, cfg); return err })
		}
		rawPush := func() (time.Duration, error) {
			cfg := next(base)
			return cpuTimed(&rawCPU, func() error { return raw.push(ctx, cfg) })
		}
		load := loadAvg()
		t, err := interleave(rng, pushWarm, o.samples, hub, rawPush)
		if err != nil {
			return nil, err
		}
		mib := size >> 20
		log("  push %d MiB: hub %.1f ms (%s), raw %.1f ms (%s), load %s", mib, medianMS(t[0]), spreadMS(t[0]), medianMS(t[1]), spreadMS(t[1]), load)
		maxRatio := 1.3
		if size >= 20<<20 {
			maxRatio = 1.2
		}
		r := ratioRow(fmt.Sprintf("1 push ack %d MiB (PushConfig)", mib), "ms", medianMS(t[0]), medianMS(t[1]), maxRatio, o.samples)
		r.withSpread(t[0], t[1], load)
		r.Note = cpuNote("push", hubCPU[pushWarm:], rawCPU[pushWarm:], medianMS(t[1]))
		rows = append(rows, r)
	}
	for _, size := range []int{20 << 20, o.uploadMax} {
		if size < 20<<20 || (size == o.uploadMax && size == 20<<20) {
			continue
		}
		base := genConfig(size)
		var hubCPU, rawCPU []time.Duration
		hub := func() (time.Duration, error) {
			cfg := next(base)
			sum := config.Hash(cfg)
			return cpuTimed(&hubCPU, func() error { return uploadConfig(ctx, e.client, cfg, sum) })
		}
		rawUp := func() (time.Duration, error) {
			cfg := next(base)
			return cpuTimed(&rawCPU, func() error { return raw.upload(ctx, cfg) })
		}
		samples := o.samples
		if size > 20<<20 {
			samples = o.bigSamples
		}
		load := loadAvg()
		t, err := interleave(rng, uploadWarm, samples, hub, rawUp)
		if err != nil {
			return nil, err
		}
		mib := size >> 20
		log("  upload %d MiB: hub %.1f ms (%s), raw %.1f ms (%s), load %s", mib, medianMS(t[0]), spreadMS(t[0]), medianMS(t[1]), spreadMS(t[1]), load)
		r := ratioRow(fmt.Sprintf("1 upload ack %d MiB (UploadConfig, 1 MiB chunks)", mib), "ms", medianMS(t[0]), medianMS(t[1]), 1.2, samples)
		r.withSpread(t[0], t[1], load)
		r.Note = "baseline: a raw client stream of the same chunks, each pwritten as it arrives, one fdatasync after the last; the hub's expected_hash is computed before the clock starts; " +
			cpuNote("upload", hubCPU[uploadWarm:], rawCPU[uploadWarm:], medianMS(t[1]))
		if size != o.uploadMax {
			r.Info = true
		}
		rows = append(rows, r)
		base = nil
	}
	peak, err := uploadPeakRSS(ctx, o.uploadMax, log)
	if err != nil {
		return nil, err
	}
	return append(rows, peak), nil
}
