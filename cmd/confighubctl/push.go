package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

// labelFlags collects repeated --label k=v.
type labelFlags map[string]string

func (l labelFlags) String() string { return "" }

func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	l[k] = v
	return nil
}

func cmdPush(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("push", g, errw, "push -f FILE [--stream s] [--format auto|json|yaml] [--expected-generation n] [--label k=v]... [--progress auto|always|never] [--upload]")
	file := fs.String("f", "", "configuration file (JSON or YAML); - reads standard input")
	stream := fs.String("stream", config.DefaultStream, "stream")
	expected := fs.Uint64("expected-generation", 0, "push only if the stream is at this generation (0: any)")
	format := fs.String("format", "auto", "format of the file: auto, json or yaml")
	progress := fs.String("progress", "auto", "upload progress bar on stderr: auto (when stderr is a terminal), always, never")
	upload := fs.Bool("upload", false, "send by UploadConfig in chunks whatever the size (default: PushConfig up to 4 MiB, and UploadConfig above or when the hub refuses the message as larger than its --max-message-bytes)")
	labels := labelFlags{}
	fs.Var(labels, "label", "label key=value stored with the configuration (repeatable)")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("push: unexpected argument %q (the file goes in -f)", pos[0])
	}
	if err := checkOutput(g); err != nil {
		return err
	}
	if *file == "" {
		return usagef("push: -f FILE is required")
	}
	var f confighubv1.Format
	switch strings.ToLower(*format) {
	case "auto":
	case "json":
		f = confighubv1.Format_FORMAT_JSON
	case "yaml", "yml":
		f = confighubv1.Format_FORMAT_YAML
	default:
		return usagef("push: --format %q: want auto, json or yaml", *format)
	}
	var raw []byte
	if *file == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(*file)
	}
	if err != nil {
		return &cliError{"push", err}
	}
	var bar *progressBar
	switch *progress {
	case "always":
		bar = newProgressBar(errw)
	case "auto":
		if isTerminal(errw) {
			bar = newProgressBar(errw)
		}
	case "never":
	default:
		return usagef("push: --progress %q: want auto, always or never", *progress)
	}
	var opts []hubclient.Option
	if bar != nil {
		opts = append(opts, hubclient.WithProgress(bar.update))
	}
	cc, err := dialConn(g)
	if err != nil {
		return err
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	p := hubclient.Push{Stream: *stream, Config: raw, Format: f, ExpectedGeneration: *expected, Labels: labels}
	res, err := pushFitting(ctx, cc, p, *upload, opts)
	if bar != nil {
		bar.done(err == nil)
	}
	if err != nil {
		return &cliError{"push", err}
	}
	name := *stream
	// A stream without sinks is legitimate but is what a misspelt --stream
	// gives; nil from a hub too old to say.
	if res.Sinks != nil && res.GetSinks() == 0 {
		fmt.Fprintf(errw, "warning: stream %s has no sinks: nothing applies this configuration until a sink of stream %q is added (confighubctl sinks list shows each sink's stream)\n", name, name)
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	if res.GetUnchanged() {
		fmt.Fprintf(out, "unchanged: stream %s stays at generation %d (hash %s)\n", name, res.GetGeneration(), short(res.GetHash()))
	} else {
		fmt.Fprintf(out, "accepted: stream %s generation %d (hash %s, %s)\n", name, res.GetGeneration(), short(res.GetHash()), humanBytes(int64(len(raw))))
	}
	return nil
}

// pushFitting pushes p as hubclient does (PushConfig up to its unary
// limit, UploadConfig above; UploadConfig only when upload is set). When
// the hub refuses a message as larger than its --max-message-bytes, it
// sends p again, once, by UploadConfig in chunks under that limit: grpc
// refuses such a message before the hub reads it, so nothing was stored,
// and an operator who lowered the limit gets the push done instead of
// an error to decode.
func pushFitting(ctx context.Context, cc grpc.ClientConnInterface, p hubclient.Push, upload bool, opts []hubclient.Option) (*confighubv1.PushConfigResponse, error) {
	first := opts
	if upload {
		first = append(slices.Clip(opts), hubclient.WithUnaryLimit(0))
	}
	res, err := hubclient.New(cc, first...).Push(ctx, p)
	limit, ok := messageLimit(err)
	if !ok {
		return res, err
	}
	chunk := min(hubclient.DefaultChunkBytes, limit-chunkFraming)
	unary := !upload && len(p.Config) <= hubclient.DefaultUnaryLimit
	// An upload already in chunks this small was refused for its header:
	// the same upload again would be refused again.
	if chunk > 0 && (unary || chunk < hubclient.DefaultChunkBytes) {
		retry := append(slices.Clip(opts), hubclient.WithUnaryLimit(0), hubclient.WithChunkBytes(chunk))
		res, err = hubclient.New(cc, retry...).Push(ctx, p)
		if _, ok = messageLimit(err); !ok {
			return res, err
		}
	}
	return nil, fmt.Errorf("%s: the hub refuses gRPC messages above %d bytes (its --max-message-bytes), and this push does not fit them even by UploadConfig in chunks; raise the hub's --max-message-bytes", oneLine(err), limit)
}

// chunkFraming is what an upload chunk's message adds to its bytes: the
// field's tag and length prefix take at most 6 bytes.
const chunkFraming = 16

// tooLargeRE matches grpc's refusal of a received message above its limit,
// with and without decompression; the last number is the limit.
var tooLargeRE = regexp.MustCompile(`larger than max \(?(?:\d+ vs\. )?(\d+)\)?$`)

// messageLimit returns the hub's message limit when err is grpc's refusal
// of a message larger than it.
func messageLimit(err error) (int, bool) {
	st, ok := status.FromError(err)
	if !ok || err == nil || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	m := tooLargeRE.FindStringSubmatch(st.Message())
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// printJSON writes m as indented JSON. protojson's own spacing is
// deliberately unstable, so the output is re-indented for scripts and diffs.
func printJSON(out io.Writer, m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, b, "", "  "); err != nil {
		return err
	}
	ind.WriteByte('\n')
	_, err = out.Write(ind.Bytes())
	return err
}

// printJSONs writes ms as one indented JSON array, or the only one as an
// object when asArray is false.
func printJSONs(out io.Writer, ms []proto.Message, asArray bool) error {
	if !asArray && len(ms) == 1 {
		return printJSON(out, ms[0])
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		j, err := protojson.Marshal(m)
		if err != nil {
			return err
		}
		b.Write(j)
	}
	b.WriteByte(']')
	var ind bytes.Buffer
	if err := json.Indent(&ind, b.Bytes(), "", "  "); err != nil {
		return err
	}
	ind.WriteByte('\n')
	_, err := out.Write(ind.Bytes())
	return err
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is w's width, or 0 when unknown.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// progressBar draws "upload [#####.....] 45% 9.0/20.0 MiB" on one line,
// redrawn with a carriage return.
type progressBar struct {
	w    io.Writer
	last int
}

func newProgressBar(w io.Writer) *progressBar { return &progressBar{w: w, last: -1} }

const barWidth = 30

func (p *progressBar) update(sent, total int64) {
	if total <= 0 {
		return
	}
	pct := int(sent * 100 / total)
	if pct == p.last {
		return
	}
	p.last = pct
	fill := int(sent * barWidth / total)
	fmt.Fprintf(p.w, "\rupload [%s%s] %3d%% %s / %s", strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill), pct, humanBytes(sent), humanBytes(total))
}

func (p *progressBar) done(ok bool) {
	if p.last < 0 {
		return // a unary push: no bar was drawn
	}
	if ok {
		fmt.Fprintln(p.w, " done")
	} else {
		fmt.Fprintln(p.w, " failed")
	}
}
