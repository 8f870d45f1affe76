package hub

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
)

// Upload is one UploadConfig under way. Every chunk is copied once into raw
// (what the sinks get) and hashed; JSON is also checked and staged chunk by
// chunk by two workers, so the ack follows the last chunk by about one
// flush; YAML is pushed once complete.
type Upload struct {
	h       *Hub
	ctx     context.Context
	in      PushInput
	stream  string
	total   int64
	want    string
	got     int64
	lead    []byte // leading whitespace while the format is unknown (the next byte tells)
	decided bool
	raw     []byte // allocated at the first chunk: a header alone holds no memory
	off     int64
	sum     *config.Hasher
	// JSON: each chunk's span of raw is queued to both workers once written.
	scan    *config.Scanner
	w       store.StageWriter
	toCheck chan span
	toStore chan span
	workers sync.WaitGroup
	werr    atomic.Pointer[error] // the first error of a worker
	release func()                // gives the upload's share of the budget back
}

// pipeDepth is how many chunks each worker may have queued: a full queue
// holds the client back, so little is left to work off after the last chunk.
const pipeDepth = 4

// span is a chunk's place in Upload.raw.
type span struct{ from, to int64 }

// BeginUpload checks an upload's header (in without Config) and returns the Upload its chunks go to; ctx bounds the upload.
func (h *Hub) BeginUpload(ctx context.Context, in PushInput, totalSize uint64, expectedHash string) (*Upload, error) {
	switch {
	case totalSize == 0:
		return nil, fmt.Errorf("%w: upload header: total_size must be > 0", ErrInvalid)
	case h.maxBytes > 0 && totalSize > uint64(h.maxBytes):
		return nil, fmt.Errorf("%w: upload of %d bytes exceeds the limit of %d bytes (--max-config-bytes)", ErrTooLarge, totalSize, h.maxBytes)
	case len(expectedHash) != 64:
		return nil, fmt.Errorf("%w: upload header: expected_hash must be 64 hex characters", ErrInvalid)
	}
	stream := config.StreamName(in.Stream)
	h.bounds.mu.Lock()
	err := h.checkConfigLocked(stream, int64(totalSize)) // admitted again at the commit
	h.bounds.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// The announced size is taken from the budget before any chunk is read.
	release, err := h.reserveUpload(int64(totalSize))
	if err != nil {
		return nil, err
	}
	u := &Upload{h: h, ctx: ctx, in: in, stream: stream, total: int64(totalSize), want: expectedHash, sum: config.NewHasher(), release: release}
	if in.Format != config.FormatUnknown {
		if err := u.decide(in.Format); err != nil {
			u.Abort() // the caller gets no Upload to Abort
			return nil, err
		}
	}
	return u, nil
}

// decide starts the workers for JSON.
func (u *Upload) decide(f config.Format) error {
	u.decided = true
	if f != config.FormatJSON {
		return nil
	}
	u.in.Format = f
	w, err := u.h.store.StageStream(u.ctx, u.stream, u.total)
	if err != nil {
		return fmt.Errorf("%w: store the configuration of stream %q: %v", ErrUnavailable, u.stream, err)
	}
	u.w, u.scan = w, config.NewScanner()
	toCheck, toStore := make(chan span, pipeDepth), make(chan span, pipeDepth)
	u.toCheck, u.toStore = toCheck, toStore
	work := func(ch <-chan span, f func([]byte) error) {
		for sp := range ch {
			if err := u.failed(); err == nil {
				if err = f(u.raw[sp.from:sp.to]); err != nil {
					u.werr.CompareAndSwap(nil, &err)
				}
			}
		}
	}
	u.workers.Go(func() {
		work(toCheck, func(b []byte) error {
			if _, err := u.scan.Write(b); err != nil {
				return fmt.Errorf("%w: stream %q: %w", ErrInvalid, u.stream, err)
			}
			return nil
		})
	})
	u.workers.Go(func() {
		// The stage is invisible until the commit, which waits for the check.
		work(toStore, func(b []byte) error {
			if _, err := u.w.Write(b); err != nil {
				return fmt.Errorf("%w: store the configuration of stream %q: %v", ErrUnavailable, u.stream, err)
			}
			u.sum.Write(b)
			return nil
		})
	})
	return nil
}

// Received is the number of bytes so far.
func (u *Upload) Received() int64 { return u.got }

// WriteChunk takes the next chunk as pieces (the transport's receive
// buffers) and keeps no reference to them; an error ends the upload.
func (u *Upload) WriteChunk(pieces [][]byte) error {
	var n int64
	for _, p := range pieces {
		n += int64(len(p))
	}
	if u.got+n > u.total {
		return fmt.Errorf("%w: upload sent more than the announced total_size of %d bytes", ErrInvalid, u.total)
	}
	u.got += n
	for !u.decided && len(pieces) > 0 {
		p := pieces[0]
		i := 0
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n') {
			i++
		}
		if i == len(p) {
			u.lead = append(u.lead, p...)
			pieces = pieces[1:]
			continue
		}
		f := config.FormatYAML
		if p[i] == '{' {
			f = config.FormatJSON
		}
		if err := u.decide(f); err != nil {
			return err
		}
		pieces = append([][]byte{u.lead}, pieces...)
		u.lead = nil
	}
	if !u.decided {
		return nil
	}
	return u.write(pieces)
}

// write copies pieces into raw and hashes them (YAML) or queues their span (JSON).
func (u *Upload) write(pieces [][]byte) error {
	if err := u.failed(); err != nil {
		return err
	}
	if u.raw == nil {
		u.raw = make([]byte, u.total)
	}
	from := u.off
	for _, p := range pieces {
		u.off += int64(copy(u.raw[u.off:], p))
	}
	switch {
	case u.toCheck == nil:
		u.sum.Write(u.raw[from:u.off])
	case u.off > from:
		u.toCheck <- span{from, u.off}
		u.toStore <- span{from, u.off}
	}
	return nil
}

func (u *Upload) failed() error {
	if err := u.werr.Load(); err != nil {
		return *err
	}
	return nil
}

// drain waits for the workers to finish what was queued and returns their first error.
func (u *Upload) drain() error {
	if u.toCheck != nil {
		close(u.toCheck)
		close(u.toStore)
		u.toCheck, u.toStore = nil, nil
		u.workers.Wait()
	}
	return u.failed()
}

// Finish checks that every byte arrived with the announced hash, then commits (JSON) or pushes (YAML) the configuration.
func (u *Upload) Finish(ctx context.Context) (PushResult, error) {
	if u.got != u.total {
		return PushResult{}, fmt.Errorf("%w: upload truncated: got %d of %d bytes", ErrInvalid, u.got, u.total)
	}
	if !u.decided { // whitespace only
		_ = u.decide(config.FormatYAML)
		_ = u.write([][]byte{u.lead})
	}
	defer u.Abort()
	if err := u.drain(); err != nil {
		return PushResult{}, err
	}
	if got := u.sum.Sum(); got != u.want {
		return PushResult{}, fmt.Errorf("%w: upload hash mismatch: expected_hash %s, bytes hash to %s", ErrInvalid, u.want, got)
	}
	in := u.in
	in.Config, in.Hash = u.raw, u.want
	if u.w == nil {
		return u.h.Push(ctx, in)
	}
	if _, err := u.scan.Close(); err != nil {
		return PushResult{}, fmt.Errorf("%w: stream %q: %w", ErrInvalid, u.stream, err)
	}
	admitted, err := u.h.admitConfig(u.stream, u.total)
	if err != nil {
		return PushResult{}, err
	}
	defer admitted()
	p := prepared{what: "upload", hash: u.want, checked: config.Checked{Format: config.FormatJSON, JSON: u.raw}}
	p.staged, p.stageErr = u.w.Staged()
	u.w = nil
	res, err := u.h.commit(ctx, u.stream, in, p)
	if err == nil && u.total >= releaseAfterBytes {
		// Give the replaced generation's pages back now: a hub holds about one large configuration, not three.
		debug.FreeOSMemory()
	}
	return res, err
}

// releaseAfterBytes is the upload size from which Finish frees the replaced configuration's memory.
const releaseAfterBytes = 32 << 20

// Abort drops what the upload staged (a no-op after Finish) and gives its
// budget back: call it once the upload ended, whatever its outcome.
func (u *Upload) Abort() {
	_ = u.drain()
	if u.w != nil {
		_ = u.w.Discard()
		u.w = nil
	}
	u.release()
}
