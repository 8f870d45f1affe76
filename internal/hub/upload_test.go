package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/store"
	"github.com/confighub/confighub/internal/store/memory"
)

// upload sends raw to h in chunks of n bytes, as UploadConfig does, and
// says at which chunk it failed (-1 for Finish).
func upload(h *Hub, in PushInput, raw []byte, n int, hash string) (PushResult, int, error) {
	ctx := context.Background()
	u, err := h.BeginUpload(ctx, in, uint64(len(raw)), hash)
	if err != nil {
		return PushResult{}, 0, err
	}
	defer u.Abort()
	for i := 0; i*n < len(raw); i++ {
		if err := u.WriteChunk([][]byte{raw[i*n : min((i+1)*n, len(raw))]}); err != nil {
			return PushResult{}, i, err
		}
	}
	res, err := u.Finish(ctx)
	return res, -1, err
}

// bigConfig is a valid JSON configuration of about n bytes.
func bigConfig(n int, tag string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"_format_version":"3.0","services":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"svc-%d-%s","host":"h%d.default.svc","port":80,"tags":["k8s-name:x"]}`, i, tag, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// An upload, JSON (detected or said) or YAML, small or large, is stored
// and handed to the engine with exactly its bytes, in one generation each.
func TestUploadStoresThenPublishes(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fan := newFake()
		h := New(st, fan.ports())
		yml := []byte("_format_version: \"3.0\"\nservices: []\n")
		for i, c := range []struct {
			raw []byte
			f   config.Format
		}{
			{bigConfig(1<<20, "a"), config.FormatJSON},
			{append([]byte(" \n\t"), bigConfig(300<<10, "b")...), config.FormatUnknown},
			{bigConfig(100, "c"), config.FormatUnknown},
			{yml, config.FormatUnknown},
			{yml, config.FormatYAML},
		} {
			res, at, err := upload(h, PushInput{Format: c.f, Labels: map[string]string{"n": fmt.Sprint(i)}}, c.raw, 64<<10, config.Hash(c.raw))
			wantGen := uint64(i + 1)
			if i == 4 {
				wantGen = 4 // the same bytes again: unchanged
			}
			if err != nil || res.Generation != wantGen {
				t.Fatalf("upload %d: %+v, %v (chunk %d); want generation %d", i, res, err, at, wantGen)
			}
			s, err := st.GetStream(context.Background(), config.DefaultStream)
			if err != nil {
				t.Fatalf("upload %d: read back: %v", i, err)
			}
			if !bytes.Equal(s.Raw, c.raw) || s.Hash != config.Hash(c.raw) {
				t.Fatalf("upload %d: stored %d bytes, want its %d", i, len(s.Raw), len(c.raw))
			}
			last := fan.Current(config.DefaultStream)
			if !bytes.Equal(last.Raw, c.raw) || last.Generation != min(wantGen, 4) {
				t.Fatalf("upload %d: engine got generation %d of %d bytes", i, last.Generation, len(last.Raw))
			}
		}
		if len(fan.published) != 4 {
			t.Fatalf("published %d generations, want 4 (the last upload is unchanged)", len(fan.published))
		}
	}, oneBlob)
}

// A bad upload stores nothing and publishes nothing; streamed, invalid
// JSON is refused once the chunk that holds the first bad byte was
// checked, without waiting for the end; the staged bytes are gone.
func TestBadUploadChangesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fan := newFake()
		h := New(st, fan.ports(), WithMaxConfigBytes(4<<20))
		good := bigConfig(1<<20, "good")
		if _, _, err := upload(h, PushInput{}, good, 64<<10, config.Hash(good)); err != nil {
			t.Fatal(err)
		}
		bad := bigConfig(1<<20, "bad")
		bad[200<<10] = 0x01 // a control byte: invalid in a string and out of one
		noFV := bigConfig(1<<20, "nofv")
		copy(noFV, `{"_format_version":`)
		noFV = bytes.Replace(noFV, []byte(`{"_format_version":"3.0",`), []byte(`{"_formt_version":"3.0", `), 1)
		other := bigConfig(1<<20, "other")
		for _, c := range []struct {
			name    string
			raw     []byte
			hash    string
			f       config.Format
			want    error
			msg     string
			atChunk int
		}{
			{"bad byte", bad, config.Hash(bad), config.FormatJSON, config.ErrInvalid, "not valid JSON", 3},
			{"no _format_version", noFV, config.Hash(noFV), config.FormatUnknown, config.ErrInvalid, "_format_version is missing", -1},
			{"hash mismatch", other, config.Hash(good), config.FormatJSON, ErrInvalid, "hash mismatch", -1},
			{"stale", other, config.Hash(other), config.FormatJSON, ErrStale, "generation", -1},
		} {
			in := PushInput{Format: c.f}
			if c.name == "stale" {
				in.ExpectedGeneration = 7
			}
			_, at, err := upload(h, in, c.raw, 64<<10, c.hash)
			// Streamed, the chunks are checked while the next ones arrive:
			// the error comes with a later chunk or at the end, never before.
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || (at != c.atChunk && (c.atChunk < 0 || at >= 0 && at < c.atChunk)) {
				t.Fatalf("%s: %v at chunk %d; want %v naming %q at chunk %d", c.name, err, at, c.want, c.msg, c.atChunk)
			}
		}
		s, err := st.GetStream(context.Background(), config.DefaultStream)
		if err != nil {
			t.Fatalf("after the bad uploads: %v", err)
		}
		if s.Generation != 1 || !bytes.Equal(s.Raw, good) || len(fan.published) != 1 {
			t.Fatalf("a bad upload changed something: gen %d, published %d", s.Generation, len(fan.published))
		}
		// A truncated upload and one that sends too much.
		u, err := h.BeginUpload(context.Background(), PushInput{}, 10, config.Hash(good))
		if err != nil {
			t.Fatal(err)
		}
		if err := u.WriteChunk([][]byte{[]byte(`{"_format_`)}); err != nil {
			t.Fatal(err)
		}
		if err := u.WriteChunk([][]byte{[]byte(`x`)}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("an 11th byte of 10: %v", err)
		}
		u.Abort()
		u, err = h.BeginUpload(context.Background(), PushInput{}, 10, config.Hash(good))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Finish(context.Background()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("0 of 10 bytes: %v", err)
		}
		u.Abort()
	}, oneBlob)
}

// refusingStager cannot open a stage for an upload (a full disk).
type refusingStager struct{ store.Store }

func (refusingStager) StageStream(context.Context, string, int64) (store.StageWriter, error) {
	return nil, errors.New("no space left on device")
}

// An upload whose stage cannot open is refused by BeginUpload, which gives
// its share of the upload budget back: the caller gets no Upload to Abort,
// and a budget held by it would refuse every later upload
// (TestUploadThatCannotStageGivesItsBudgetBack).
func TestUploadThatCannotStageGivesItsBudgetBack(t *testing.T) {
	h := New(refusingStager{memory.New()}, newFake().ports(), WithUploadBudgetBytes(int64(len(good))))
	for i := range 2 {
		u, err := h.BeginUpload(context.Background(), PushInput{Format: config.FormatJSON}, uint64(len(good)), config.Hash([]byte(good)))
		if !errors.Is(err, ErrUnavailable) || u != nil {
			t.Fatalf("upload %d on a store that cannot stage: %v, %v; want Unavailable and no Upload", i, u, err)
		}
	}
	if held, n := h.UploadsInFlight(); held != 0 || n != 0 {
		t.Fatalf("budget after refused uploads: %d bytes held by %d, want none", held, n)
	}
}

// WriteChunk takes a chunk as pieces, cut anywhere (the transport's
// receive buffers), and keeps no reference to them once it returns: the
// server reuses them at once. Each piece is overwritten after its chunk
// was written, and the stored and published bytes are still the upload's.
func TestWriteChunkKeepsNoReference(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fan := newFake()
		h := New(st, fan.ports())
		for _, raw := range [][]byte{bigConfig(3<<20, "pieces"), append([]byte("\n  "), bigConfig(100<<10, "lead")...)} {
			ctx := context.Background()
			u, err := h.BeginUpload(ctx, PushInput{}, uint64(len(raw)), config.Hash(raw))
			if err != nil {
				t.Fatal(err)
			}
			buf := bytes.Clone(raw)
			for off, i := 0, 0; off < len(buf); i++ {
				// Chunks of about 1 MiB in pieces of 1 to 16 KiB, the first
				// ones whitespace only for the second config.
				var pieces [][]byte
				for end := min(off+1<<20, len(buf)); off < end; {
					n := min(1+(i*7919+off)%(16<<10), end-off)
					pieces = append(pieces, buf[off:off+n])
					off += n
				}
				if err := u.WriteChunk(pieces); err != nil {
					t.Fatal(err)
				}
				for _, p := range pieces {
					for j := range p {
						p[j] = 'X'
					}
				}
			}
			if _, err := u.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			u.Abort()
			s, err := st.GetStream(ctx, config.DefaultStream)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(s.Raw, raw) || !bytes.Equal(fan.Current(config.DefaultStream).Raw, raw) {
				t.Fatalf("stored or published bytes differ from the %d uploaded", len(raw))
			}
		}
	}, nil)
}

// An upload of any format, in chunks of any size, is refused past its
// announced size, when truncated or when its bytes do not hash to the
// header's; the header alone holds no memory; the bytes that arrive whole
// are pushed exactly.
func TestUploadBoundedByItsHeader(t *testing.T) {
	h := New(memory.New(), newFake().ports(), WithMaxConfigBytes(256<<20))
	body := []byte("_format_version: \"3.0\"\n")
	sum := config.Hash(body)
	if _, err := h.BeginUpload(context.Background(), PushInput{}, 300<<20, sum); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	u, err := h.BeginUpload(context.Background(), PushInput{Format: config.FormatYAML}, 200<<20, sum)
	if err != nil {
		t.Fatal(err)
	}
	if u.raw != nil {
		t.Fatalf("a 200 MiB header holds %d bytes", cap(u.raw))
	}
	u.Abort()
	for _, f := range []config.Format{config.FormatUnknown, config.FormatYAML} {
		u, err := h.BeginUpload(context.Background(), PushInput{Format: f}, uint64(len(body)), sum)
		if err != nil {
			t.Fatal(err)
		}
		_ = u.WriteChunk([][]byte{body[:5]})
		if _, err := u.Finish(context.Background()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("truncated: %v", err)
		}
		_ = u.WriteChunk([][]byte{body[5:]})
		if err := u.WriteChunk([][]byte{[]byte("x")}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("more than total_size: %v", err)
		}
		if res, err := u.Finish(context.Background()); err != nil || res.Hash != sum {
			t.Fatalf("finish: %+v, %v", res, err)
		}
		u.Abort()
	}
	if _, _, err := upload(h, PushInput{}, body, 3, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "hash mismatch") {
		t.Fatalf("mismatch: %v", err)
	}
}

// Whatever the bytes and however they are cut, an upload reassembles them
// exactly: it is what the check of the whole says, and a corrupt hash
// refuses what the check accepts.
func FuzzUpload(f *testing.F) {
	f.Add([]byte(good), uint8(3), false)
	f.Add([]byte("_format_version: '3.0'"), uint8(5), false)
	f.Add([]byte("abc"), uint8(1), true)
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8, corrupt bool) {
		if len(body) == 0 {
			return
		}
		sum := config.Hash(body)
		if corrupt {
			sum = config.Hash(append([]byte{1}, body...))
		}
		fan := newFake()
		h := New(memory.New(), fan.ports())
		_, _, err := upload(h, PushInput{}, body, int(chunk)%17+1, sum)
		_, cerr := config.Check(body, config.FormatUnknown)
		switch {
		case corrupt && cerr == nil && (err == nil || !strings.Contains(err.Error(), "hash mismatch")):
			t.Fatalf("corrupt hash: %v", err)
		case corrupt && !errors.Is(err, ErrInvalid):
			t.Fatalf("corrupt hash of an invalid configuration: %v", err)
		case !corrupt && (err == nil) != (cerr == nil):
			t.Fatalf("upload: %v; check of the whole: %v", err, cerr)
		case !corrupt && err == nil && !bytes.Equal(fan.Current(config.DefaultStream).Raw, body):
			t.Fatal("reassembled bytes differ")
		}
	})
}
