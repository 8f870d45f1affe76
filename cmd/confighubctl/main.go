// Command confighubctl is the operator's client of a confighub hub. Every
// command goes through one path: its flags, one call to the hub within
// --timeout, its output as a table or --output json, or one error line.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/confighub/confighub/api/hubclient"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; Ctrl-C (SIGINT) or SIGTERM ends it.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr)
}

const usage = `Usage: confighubctl [global flags] <command> [flags]

Commands:
  push -f FILE [--stream s] [--format auto|json|yaml] [--expected-generation n] [--label k=v]...
       [--progress auto|always|never] [--upload]
                           push a Kong declarative configuration (JSON or YAML; - for stdin);
                           above 4 MiB, with --upload, or when the hub refuses it as larger
                           than its --max-message-bytes it is uploaded in chunks (UploadConfig)
  status [--stream s] [--watch] [--redraw d]
                           the per-sink status table; --watch redraws it as sinks apply, and
                           says above it while the hub is unreachable and the watch retries
  sinks list [--stream s]  list the sinks
  sinks put -f FILE.yaml   create or replace sinks (one sink or a list, PutSink's shape)
  sinks delete NAME...     delete sinks
  streams list             list the streams: generation, bytes, sinks, accept time, hash
  streams delete NAME      delete a stream that no sink reads (one created by mistake), so it no
                           longer counts against the hub's --max-streams
  config get [--stream s] [--generation n] [--sink NAME] [--failed] [-o FILE]
                           print a stream's configuration, or what a sink last applied (or failed)
  history [--stream s] [--limit n] [--before GENERATION]
                           the stream's retained generations: who pushed each, its size, entities
                           and outcome (converged, converging, rejected by N of M sinks)
  diff [FROM [TO]] [--stream s] [--sink NAME] [--color auto|always|never]
                           what changed, entity by entity, as deck diff prints it (default: the
                           current generation against the one before); --sink: what a FAILED or
                           DEGRADED sink last applied against what it was asked to apply
  rollback GENERATION [--stream s] [--expected-generation n]
                           push a retained generation's configuration again, as a new generation
  cluster-cert [--cert FILE] [--key FILE] [--days N]
                           write a shared-mode cluster certificate for Kong data planes in
                           hybrid mode (the shape of kong hybrid gen_cert); needs no hub

"<command> --help" lists a command's flags. A failure exits 1 with one line; bad usage exits 2.

Global flags (also accepted after the command):
`

type globals struct {
	addr, token, tlsCA, tlsCert, tlsKey, tlsServerName string
	insecure                                           bool
	output                                             string
	timeout                                            time.Duration
}

func addGlobals(fs *flag.FlagSet, g *globals) {
	fs.StringVar(&g.addr, "addr", cmp.Or(os.Getenv("CONFIGHUB_ADDR"), "127.0.0.1:7070"), "hub gRPC address (env CONFIGHUB_ADDR)")
	fs.StringVar(&g.token, "token", os.Getenv("CONFIGHUB_TOKEN"), "bearer token (env CONFIGHUB_TOKEN)")
	fs.StringVar(&g.tlsCA, "tls-ca", os.Getenv("CONFIGHUB_TLS_CA"), "PEM CA that signed the hub's certificate (enables TLS; env CONFIGHUB_TLS_CA)")
	fs.StringVar(&g.tlsCert, "tls-cert", os.Getenv("CONFIGHUB_TLS_CERT"), "PEM client certificate for mTLS (enables TLS; env CONFIGHUB_TLS_CERT)")
	fs.StringVar(&g.tlsKey, "tls-key", os.Getenv("CONFIGHUB_TLS_KEY"), "PEM key of --tls-cert (env CONFIGHUB_TLS_KEY)")
	fs.StringVar(&g.tlsServerName, "tls-server-name", "", "name to verify in the hub's certificate (default: the host of --addr)")
	fs.BoolVar(&g.insecure, "insecure", false, "plaintext (the default when no --tls-* flag is set)")
	fs.StringVar(&g.output, "output", "table", "output: table or json")
	fs.DurationVar(&g.timeout, "timeout", 30*time.Second, "deadline of one request (not of status --watch)")
}

type command struct {
	synopsis string // its usage line, after "confighubctl "
	args     bool   // takes positional arguments
	noHub    bool   // --output does not apply
	flags    func(fs *flag.FlagSet) func(x *invocation, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"push":           {synopsis: pushSynopsis, flags: pushCmd},
		"status":         {synopsis: "status [--stream s] [--watch] [--redraw d]", flags: statusCmd},
		"sinks list":     {synopsis: "sinks list [--stream s]", flags: sinksList},
		"sinks put":      {synopsis: "sinks put -f FILE.yaml", flags: sinksPut},
		"sinks delete":   {synopsis: "sinks delete NAME...", args: true, flags: deleteCmd("sink", "a sink")},
		"streams list":   {synopsis: "streams list", flags: streamsList},
		"streams delete": {synopsis: "streams delete NAME", args: true, flags: deleteCmd("stream", "one stream")},
		"config get":     {synopsis: configSynopsis, flags: configGet},
		"history":        {synopsis: "history [--stream s] [--limit n] [--before GENERATION]", flags: historyCmd},
		"diff":           {synopsis: "diff [FROM [TO]] [--stream s] [--sink NAME] [--color auto|always|never]", args: true, flags: diffCmd},
		"rollback":       {synopsis: "rollback GENERATION [--stream s] [--expected-generation n]", args: true, flags: rollbackCmd},
		"cluster-cert":   {synopsis: "cluster-cert [--cert FILE] [--key FILE] [--days N]", args: true, noHub: true, flags: clusterCert},
	}
}

type cliError struct {
	cmd string
	err error
}

func (e *cliError) Error() string { return e.cmd + ": " + oneLine(e.err) }

// usageError marks bad arguments (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// oneLine renders an error as one line; a gRPC status as "Code: message".
func oneLine(err error) string {
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Code().String() + ": " + st.Message()
	}
	return strings.Join(strings.Fields(msg), " ")
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var g globals
	root := flag.NewFlagSet("confighubctl", flag.ContinueOnError)
	root.SetOutput(stderr)
	addGlobals(root, &g)
	root.Usage = func() {
		fmt.Fprint(root.Output(), usage)
		root.PrintDefaults()
	}
	if err := parseQuiet(root, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "confighubctl: %v (see --help)\n", err)
		return 2
	}
	rest := root.Args()
	if len(rest) == 0 || rest[0] == "help" {
		root.Usage()
		if len(rest) == 0 {
			return 2
		}
		return 0
	}
	err := dispatch(ctx, root, &g, rest, stdout, stderr)
	var ue usageError
	var ce *cliError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "confighubctl: %s\n", ue.msg)
		return 2
	case !errors.As(err, &ce):
		ce = &cliError{cmd: rest[0], err: err}
	}
	fmt.Fprintf(stderr, "confighubctl: %s\n", ce.Error())
	return 1
}

// dispatch finds the command of args, parses its flags and the globals, and runs it.
func dispatch(ctx context.Context, root *flag.FlagSet, g *globals, args []string, stdout, stderr io.Writer) error {
	groups := map[string]struct{ help, want, known string }{
		"sinks":   {"sinks list [--stream s] | put -f FILE.yaml | delete NAME", "want list, put -f FILE or delete NAME", "list, put or delete"},
		"streams": {"streams list | delete NAME", "want list or delete NAME", "list or delete"},
		"config":  {configSynopsis, "want get", ""},
	}
	aliases := map[string]string{"sinks ls": "sinks list", "sinks apply": "sinks put", "sinks rm": "sinks delete",
		"streams ls": "streams list", "streams rm": "streams delete"}
	name, args := args[0], args[1:]
	if gr, ok := groups[name]; ok {
		var sub string
		if len(args) > 0 {
			sub = name + " " + args[0]
			if a, ok := aliases[sub]; ok {
				sub = a
			}
		}
		_, known := commands()[sub]
		switch {
		case len(args) > 0 && slices.Contains([]string{"-h", "--help", "-help"}, args[0]):
			fmt.Fprintf(stderr, "Usage: confighubctl %s\n", gr.help)
			return nil
		case len(args) == 0 || strings.HasPrefix(args[0], "-") || !known && gr.known == "":
			return usagef("%s: %s", name, gr.want)
		case !known:
			return usagef("%s: unknown subcommand %q (want %s)", name, args[0], gr.known)
		}
		name, args = sub, args[1:]
	}
	c, ok := commands()[name]
	if !ok {
		return usagef("unknown command %q (want push, status, sinks, streams, config, history, diff, rollback or cluster-cert; see --help)", name)
	}
	fs := flag.NewFlagSet("confighubctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The globals, sharing their values, described in short.
	brief := map[string]string{"tls-ca": "PEM CA of the hub's certificate", "tls-cert": "PEM client certificate (mTLS)",
		"tls-key": "PEM key of --tls-cert", "tls-server-name": "name to verify in the hub's certificate",
		"insecure": "plaintext", "timeout": "deadline of one request"}
	root.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, cmp.Or(brief[f.Name], f.Usage)) })
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: confighubctl %s\n\nFlags:\n", c.synopsis)
		fs.PrintDefaults()
	}
	body := c.flags(fs)
	pos, err := parseSub(fs, args)
	switch {
	case err != nil:
		return err
	case !c.args && len(pos) > 0:
		hint := ""
		if fs.Lookup("f") != nil {
			hint = " (the file goes in -f)"
		}
		return usagef("%s: unexpected argument %q%s", name, pos[0], hint)
	case !c.noHub && g.output != "table" && g.output != "json":
		return usagef("--output %q: want table or json", g.output)
	}
	x := &invocation{ctx: ctx, name: name, g: g, out: stdout, errw: stderr}
	defer func() {
		if x.conn != nil {
			_ = x.conn.Close()
		}
	}()
	return body(x, pos)
}

// parseQuiet parses args, printing the usage text for --help only.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf strings.Builder
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = io.WriteString(out, buf.String())
	}
	return err
}

// parseSub parses a command's flags, also after positional arguments.
func parseSub(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseQuiet(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v (see --help)", strings.TrimPrefix(fs.Name(), "confighubctl "), err)
		}
		if args = fs.Args(); len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// invocation is one run of a command; conn is made at the first call.
type invocation struct {
	ctx       context.Context
	name      string
	g         *globals
	out, errw io.Writer
	conn      *grpc.ClientConn
}

func (x *invocation) client(opts ...hubclient.Option) (*hubclient.Client, error) {
	if x.conn == nil {
		cc, err := dial(x.g)
		if err != nil {
			return nil, err
		}
		x.conn = cc
	}
	return hubclient.New(x.conn, opts...), nil
}

// call makes one request within --timeout; its error is named what.
func call[T any](x *invocation, what string, fn func(context.Context, *hubclient.Client) (T, error)) (T, error) {
	var zero T
	c, err := x.client()
	if err != nil {
		return zero, err
	}
	ctx, cancel := context.WithTimeout(x.ctx, x.g.timeout)
	defer cancel()
	res, err := fn(ctx, c)
	if err != nil {
		return zero, &cliError{what, err}
	}
	return res, nil
}

func (x *invocation) print(res proto.Message, text func() string) error {
	if x.g.output == "json" {
		return printJSON(x.out, false, res)
	}
	_, err := io.WriteString(x.out, text())
	return err
}

// each runs do for items 0..n-1 and prints each one's text, or with --output json those done.
func (x *invocation) each(n int, do func(i int) (proto.Message, string, error)) error {
	var done []proto.Message
	defer func() {
		if x.g.output == "json" && len(done) > 0 {
			_ = printJSON(x.out, n > 1, done...)
		}
	}()
	for i := range n {
		res, text, err := do(i)
		if err != nil {
			return err
		}
		if x.g.output == "json" {
			done = append(done, res)
		} else {
			fmt.Fprint(x.out, text)
		}
	}
	return nil
}

// printJSON writes ms as stably indented JSON, an array when asArray.
func printJSON(out io.Writer, asArray bool, ms ...proto.Message) error {
	var b bytes.Buffer
	for i, m := range ms {
		j, err := protojson.Marshal(m)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(j)
	}
	raw := b.Bytes()
	if asArray {
		raw = append(append([]byte{'['}, raw...), ']')
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, raw, "", "  "); err != nil {
		return err
	}
	ind.WriteByte('\n')
	_, err := out.Write(ind.Bytes())
	return err
}

func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

func short(hash string) string { return hash[:min(len(hash), 12)] }

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func dash(s string) string { return cmp.Or(s, "-") }

// terminal reports whether w is a terminal, and its width (0: unknown).
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, _ := term.GetSize(int(f.Fd()))
	return true, width
}

func isTerminal(w io.Writer) bool { tty, _ := terminal(w); return tty }
