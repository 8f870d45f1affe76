package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/configdiff"
	"github.com/confighub/confighub/internal/store"
)

// preallocBytes bounds what an upload header reserves before any bytes.
const preallocBytes = 32 << 20

// Assembler rebuilds an uploaded configuration from chunks. It bounds memory
// by the announced size (itself bounded by the hub's limit) and hashes the
// bytes as they arrive, so Finish costs nothing more than a compare.
type Assembler struct {
	total    int64
	expected string
	buf      []byte
	h        *config.Hasher
}

// checkHeader checks an upload header's size against limit and its hash.
func checkHeader(totalSize uint64, expectedHash string, limit int64) error {
	if totalSize == 0 {
		return fmt.Errorf("%w: upload header: total_size must be > 0", ErrInvalid)
	}
	if limit > 0 && totalSize > uint64(limit) {
		return fmt.Errorf("%w: upload of %d bytes exceeds the limit of %d bytes (--max-config-bytes)", ErrTooLarge, totalSize, limit)
	}
	if len(expectedHash) != 64 {
		return fmt.Errorf("%w: upload header: expected_hash must be 64 hex characters", ErrInvalid)
	}
	return nil
}

// NewAssembler checks an upload header's size against limit and returns an
// assembler for it.
func NewAssembler(totalSize uint64, expectedHash string, limit int64) (*Assembler, error) {
	if err := checkHeader(totalSize, expectedHash, limit); err != nil {
		return nil, err
	}
	// A header alone must not reserve the whole limit (up to 256 MiB): the
	// buffer starts at the announced size only up to preallocBytes (which
	// covers the configs real gateways take without a copy) and grows
	// with the bytes that really arrive.
	return &Assembler{total: int64(totalSize), expected: expectedHash, buf: make([]byte, 0, min(totalSize, preallocBytes)), h: config.NewHasher()}, nil
}

// Write appends one chunk; more bytes than announced is an error.
func (a *Assembler) Write(chunk []byte) error {
	if int64(len(a.buf))+int64(len(chunk)) > a.total {
		return fmt.Errorf("%w: upload sent more than the announced total_size of %d bytes", ErrInvalid, a.total)
	}
	a.buf = append(a.buf, chunk...)
	a.h.Write(chunk)
	return nil
}

// Received is the number of bytes so far.
func (a *Assembler) Received() int64 { return int64(len(a.buf)) }

// Finish returns the bytes and their hash once all arrived and the hash
// matches.
func (a *Assembler) Finish() ([]byte, string, error) {
	if int64(len(a.buf)) != a.total {
		return nil, "", fmt.Errorf("%w: upload truncated: got %d of %d bytes", ErrInvalid, len(a.buf), a.total)
	}
	got := a.h.Sum()
	if got != a.expected {
		return nil, "", fmt.Errorf("%w: upload hash mismatch: expected_hash %s, bytes hash to %s", ErrInvalid, a.expected, got)
	}
	return a.buf, got, nil
}

// Upload is one UploadConfig under way. A JSON configuration is checked
// (config.Scanner),
// hashed and written to disk chunk by chunk as it arrives, so the ack
// follows the last chunk by about one flush; its bytes are copied once,
// from the transport's buffers into the one slice the sinks get after the
// commit. A YAML one (its check converts the whole document) is assembled
// in memory and pushed (Assembler, Push).
type Upload struct {
	h      *Hub
	ctx    context.Context
	in     PushInput
	stream string
	total  int64
	want   string
	got    int64
	// lead holds the leading whitespace of a document whose format is not
	// known yet (FormatUnknown: the first other byte tells).
	lead    []byte
	decided bool
	// streamed: each chunk is copied into raw (allocated at the first
	// one, filled up to off) and its span handed to two workers while
	// the transport receives the next: one checks it, the other writes it
	// to the stage and hashes it (the check costs about what the other two
	// cost together, and the disk starts on each chunk at once). raw is
	// only written before its span is queued and only read after.
	raw     []byte
	off     int64
	sum     *config.Hasher
	scan    *config.Scanner
	w       store.StageWriter
	toCheck chan span
	toStore chan span
	workers sync.WaitGroup
	mu      sync.Mutex
	werr    error // the first error of a worker
	// assembled
	asm *Assembler
	// release gives the upload's share of the budget back (Abort).
	release func()
}

// pipeDepth is how many chunks each worker may have queued. The spans
// are in raw, so a deeper queue would cost no memory, but what is queued
// when the last chunk arrives is worked off after it, on one core while
// the other idles (16 deep: up to 30 ms of the check after the last
// chunk of 200 MiB); a full queue holds the transport back instead, and
// the client with it, which leaves the workers the CPU.
const pipeDepth = 4

// span is a chunk's place in Upload.raw.
type span struct{ from, to int64 }

// BeginUpload checks an upload's header (in without Config) and returns
// the Upload its chunks go to; ctx bounds the upload.
func (h *Hub) BeginUpload(ctx context.Context, in PushInput, totalSize uint64, expectedHash string) (*Upload, error) {
	if err := checkHeader(totalSize, expectedHash, h.maxBytes); err != nil {
		return nil, err
	}
	if err := h.checkConfig(config.StreamName(in.Stream), int64(totalSize)); err != nil {
		return nil, err
	}
	// The announced size is taken from the hub-wide budget before any
	// chunk is read; Abort gives it back.
	release, err := h.uploads.reserve(int64(totalSize))
	if err != nil {
		return nil, err
	}
	u := &Upload{h: h, ctx: ctx, in: in, stream: config.StreamName(in.Stream), total: int64(totalSize), want: expectedHash, release: release}
	switch in.Format {
	case config.FormatJSON, config.FormatYAML:
		if err := u.decide(in.Format); err != nil {
			// The caller gets no Upload to Abort: give its share back here.
			u.Abort()
			return nil, err
		}
	}
	return u, nil
}

// decide starts the streamed path for JSON, the assembled path for YAML.
func (u *Upload) decide(f config.Format) error {
	u.decided = true
	if f == config.FormatJSON {
		w, err := u.h.store.StageStream(u.ctx, u.stream, u.total)
		if err != nil {
			return fmt.Errorf("%w: store the configuration of stream %q: %v", ErrUnavailable, u.stream, err)
		}
		u.w, u.scan, u.sum = w, config.NewScanner(), config.NewHasher()
		u.in.Format = config.FormatJSON
		toCheck, toStore := make(chan span, pipeDepth), make(chan span, pipeDepth)
		u.toCheck, u.toStore = toCheck, toStore
		u.workers.Go(func() {
			for sp := range toCheck {
				if u.failed() == nil {
					u.setErr(u.check(u.raw[sp.from:sp.to]))
				}
			}
		})
		u.workers.Go(func() {
			for sp := range toStore {
				if u.failed() == nil {
					u.setErr(u.store(u.raw[sp.from:sp.to]))
				}
			}
		})
		return nil
	}
	asm, err := NewAssembler(uint64(u.total), u.want, u.h.maxBytes)
	u.asm = asm
	return err
}

// Received is the number of bytes so far.
func (u *Upload) Received() int64 { return u.got }

// WriteChunk takes the next chunk as pieces, in order (the server hands
// over the transport's receive buffers as they are), and keeps no
// reference to them once it returns. An error ends the upload (Abort it).
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
		lead := u.lead
		u.lead = nil
		pieces = append([][]byte{lead}, pieces...)
	}
	if !u.decided {
		return nil
	}
	return u.write(pieces)
}

// write copies pieces into the assembler or into raw; the streamed path
// then queues their span for both workers.
func (u *Upload) write(pieces [][]byte) error {
	if u.asm != nil {
		for _, p := range pieces {
			if err := u.asm.Write(p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := u.failed(); err != nil {
		return err
	}
	if u.raw == nil {
		// At the first chunk, not the header: a header alone holds no
		// memory (the budget bounds what the uploads under way announce).
		u.raw = make([]byte, u.total)
	}
	from := u.off
	for _, p := range pieces {
		u.off += int64(copy(u.raw[u.off:], p))
	}
	if u.off == from {
		return nil
	}
	u.toCheck <- span{from, u.off}
	u.toStore <- span{from, u.off}
	return nil
}

// check checks a chunk.
func (u *Upload) check(b []byte) error {
	if _, err := u.scan.Write(b); err != nil {
		return fmt.Errorf("%w: stream %q: %w", ErrInvalid, u.stream, err)
	}
	return nil
}

// store writes a chunk to the stage (invisible until the commit, which
// waits for the check) and hashes it.
func (u *Upload) store(b []byte) error {
	if _, err := u.w.Write(b); err != nil {
		return fmt.Errorf("%w: store the configuration of stream %q: %v", ErrUnavailable, u.stream, err)
	}
	u.sum.Write(b)
	return nil
}

func (u *Upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.werr
}

func (u *Upload) setErr(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.werr == nil {
		u.werr = err
	}
}

// drain waits for the workers to finish what was queued and returns their
// first error.
func (u *Upload) drain() error {
	if u.toCheck != nil {
		close(u.toCheck)
		close(u.toStore)
		u.toCheck, u.toStore = nil, nil
		u.workers.Wait()
	}
	return u.failed()
}

// Finish checks that every byte arrived with the announced hash, then
// commits (streamed) or pushes (assembled) the configuration.
func (u *Upload) Finish(ctx context.Context) (PushResult, error) {
	if u.got != u.total {
		return PushResult{}, fmt.Errorf("%w: upload truncated: got %d of %d bytes", ErrInvalid, u.got, u.total)
	}
	if !u.decided { // whitespace only
		if err := u.decide(config.FormatYAML); err != nil {
			return PushResult{}, err
		}
		if err := u.asm.Write(u.lead); err != nil {
			return PushResult{}, err
		}
	}
	if u.asm != nil {
		raw, sum, err := u.asm.Finish()
		if err != nil {
			return PushResult{}, err
		}
		in := u.in
		in.Config, in.Hash = raw, sum
		return u.h.Push(ctx, in)
	}
	defer u.Abort()
	if err := u.drain(); err != nil {
		return PushResult{}, err
	}
	if got := u.sum.Sum(); got != u.want {
		return PushResult{}, fmt.Errorf("%w: upload hash mismatch: expected_hash %s, bytes hash to %s", ErrInvalid, u.want, got)
	}
	if _, err := u.scan.Close(); err != nil {
		return PushResult{}, fmt.Errorf("%w: stream %q: %w", ErrInvalid, u.stream, err)
	}
	w := u.w
	u.w = nil
	staged, err := w.Staged()
	if err != nil {
		return PushResult{}, fmt.Errorf("%w: store the configuration of stream %q: %v", ErrUnavailable, u.stream, err)
	}
	defer func() { _ = staged.Discard() }() // a no-op after Commit
	admitted, err := u.h.admitConfig(u.stream, u.total)
	if err != nil {
		return PushResult{}, err
	}
	defer admitted()
	// Raw is what was written: Commit stores it as it is.
	origin := u.in.Origin
	origin.Entities = configdiff.Count(u.raw)
	rec := config.New(u.stream, 0, u.want, config.FormatJSON, u.raw, nil, u.in.Labels, u.h.clock.Now()).WithOrigin(origin)
	stored, unchanged, err := staged.Commit(ctx, rec, u.in.ExpectedGeneration)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, store.ErrConflict) {
			return PushResult{}, fmt.Errorf("%w: stream %q: upload abandoned: %v", ErrUnavailable, u.stream, ctx.Err())
		}
		return PushResult{}, commitErr(ctx, u.stream, err)
	}
	return u.h.accepted(stored, unchanged, int(u.total)), nil
}

// Abort drops what a streamed upload staged (a no-op after Finish) and
// gives the upload's share of the budget back: call it once the upload
// ended, whatever its outcome.
func (u *Upload) Abort() {
	_ = u.drain()
	if u.w != nil {
		_ = u.w.Discard()
		u.w = nil
	}
	u.release()
}
