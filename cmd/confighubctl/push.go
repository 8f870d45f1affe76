package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
)

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

const pushSynopsis = "push -f FILE [--stream s] [--format auto|json|yaml] [--expected-generation n] [--label k=v]... [--progress auto|always|never] [--upload]"

func pushCmd(fs *flag.FlagSet) func(*invocation, []string) error {
	file := fs.String("f", "", "configuration file (JSON or YAML); - reads standard input")
	stream := fs.String("stream", config.DefaultStream, "stream")
	expected := fs.Uint64("expected-generation", 0, "push only if the stream is at this generation (0: any)")
	format := fs.String("format", "auto", "format of the file: auto, json or yaml")
	progress := fs.String("progress", "auto", "upload progress bar on stderr: auto (when stderr is a terminal), always, never")
	upload := fs.Bool("upload", false, "send by UploadConfig in chunks whatever the size (default: PushConfig up to 4 MiB, and UploadConfig above or when the hub refuses the message as larger than its --max-message-bytes)")
	labels := labelFlags{}
	fs.Var(labels, "label", "label key=value stored with the configuration (repeatable)")
	return func(x *invocation, _ []string) error {
		if *file == "" {
			return usagef("push: -f FILE is required")
		}
		f, ok := map[string]confighubv1.Format{"auto": 0, "json": confighubv1.Format_FORMAT_JSON,
			"yaml": confighubv1.Format_FORMAT_YAML, "yml": confighubv1.Format_FORMAT_YAML}[strings.ToLower(*format)]
		if !ok {
			return usagef("push: --format %q: want auto, json or yaml", *format)
		}
		raw, err := readInput(*file)
		if err != nil {
			return &cliError{"push", err}
		}
		var opts []hubclient.Option
		var bar *progressBar
		switch *progress {
		case "always", "auto":
			if *progress == "always" || isTerminal(x.errw) {
				bar = &progressBar{w: x.errw, last: -1}
				opts = append(opts, hubclient.WithProgress(bar.update))
			}
		case "never":
		default:
			return usagef("push: --progress %q: want auto, always or never", *progress)
		}
		p := hubclient.Push{Stream: *stream, Config: raw, Format: f, ExpectedGeneration: *expected, Labels: labels}
		res, err := call(x, "push", func(ctx context.Context, _ *hubclient.Client) (*confighubv1.PushConfigResponse, error) {
			res, err := pushFitting(ctx, x.conn, p, *upload, opts)
			bar.done(err == nil)
			return res, err
		})
		if err != nil {
			return err
		}
		// Likely a misspelt --stream; nil from a hub too old to say.
		if res.Sinks != nil && res.GetSinks() == 0 {
			fmt.Fprintf(x.errw, "warning: stream %s has no sinks: nothing applies this configuration until a sink of stream %q is added (confighubctl sinks list shows each sink's stream)\n", *stream, *stream)
		}
		return x.print(res, func() string {
			if res.GetUnchanged() {
				return fmt.Sprintf("unchanged: stream %s stays at generation %d (hash %s)\n", *stream, res.GetGeneration(), short(res.GetHash()))
			}
			return fmt.Sprintf("accepted: stream %s generation %d (hash %s, %s)\n", *stream, res.GetGeneration(), short(res.GetHash()), humanBytes(int64(len(raw))))
		})
	}
}

// pushFitting pushes p, and once more in chunks under the hub's limit when
// it refuses a message as larger than its --max-message-bytes.
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
	// An upload already in chunks this small was refused for its header.
	if chunk > 0 && (unary || chunk < hubclient.DefaultChunkBytes) {
		retry := append(slices.Clip(opts), hubclient.WithUnaryLimit(0), hubclient.WithChunkBytes(chunk))
		res, err = hubclient.New(cc, retry...).Push(ctx, p)
		if _, ok = messageLimit(err); !ok {
			return res, err
		}
	}
	return nil, fmt.Errorf("%s: the hub refuses gRPC messages above %d bytes (its --max-message-bytes), and this push does not fit them even by UploadConfig in chunks; raise the hub's --max-message-bytes", oneLine(err), limit)
}

// chunkFraming bounds what an upload chunk's message adds to its bytes.
const chunkFraming = 16

// tooLargeRE matches grpc's refusal of a message above its limit (the last number).
var tooLargeRE = regexp.MustCompile(`larger than max \(?(?:\d+ vs\. )?(\d+)\)?$`)

// messageLimit returns the hub's message limit when err is a refusal for it.
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

// progressBar draws "upload [#####.....] 45% 9.0/20.0 MiB" on one line.
type progressBar struct {
	w    io.Writer
	last int
}

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
	if p == nil || p.last < 0 {
		return
	}
	fmt.Fprintln(p.w, map[bool]string{true: " done", false: " failed"}[ok])
}
