// Command confighubctl is the operator's client of a confighub hub: push a
// configuration (with a progress bar for large uploads), show and follow
// the per-sink status, manage sinks, read back configurations, list a
// stream's generations, diff two of them entity by entity, and roll back.
//
//	confighubctl [global flags] <command> [flags]
//
//	push -f FILE [--stream s] [--expected-generation n] [--label k=v]... [--upload]
//	status [--stream s] [--watch]
//	sinks list [--stream s] | sinks put -f FILE.yaml | sinks delete NAME
//	streams list | streams delete NAME
//	config get [--stream s] [--sink NAME] [--failed] [--generation n]
//	history [--stream s] [--limit n] [--before GENERATION]
//	diff [FROM [TO]] [--stream s] [--sink NAME]
//	rollback GENERATION [--stream s] [--expected-generation n]
//
// Global flags (also accepted after the command): --addr (env
// CONFIGHUB_ADDR, default 127.0.0.1:7070), --token (env CONFIGHUB_TOKEN),
// --tls-ca, --tls-cert, --tls-key, --tls-server-name, --insecure,
// --output table|json, --timeout. A failure exits non-zero with one line:
// "confighubctl: push: InvalidArgument: ...".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/status"
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

// globals are the connection and output flags.
type globals struct {
	addr          string
	token         string
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
	insecure      bool
	output        string
	timeout       time.Duration
}

func addGlobals(fs *flag.FlagSet, g *globals) {
	fs.StringVar(&g.addr, "addr", envOr("CONFIGHUB_ADDR", "127.0.0.1:7070"), "hub gRPC address (env CONFIGHUB_ADDR)")
	fs.StringVar(&g.token, "token", os.Getenv("CONFIGHUB_TOKEN"), "bearer token (env CONFIGHUB_TOKEN)")
	fs.StringVar(&g.tlsCA, "tls-ca", os.Getenv("CONFIGHUB_TLS_CA"), "PEM CA that signed the hub's certificate (enables TLS; env CONFIGHUB_TLS_CA)")
	fs.StringVar(&g.tlsCert, "tls-cert", os.Getenv("CONFIGHUB_TLS_CERT"), "PEM client certificate for mTLS (enables TLS; env CONFIGHUB_TLS_CERT)")
	fs.StringVar(&g.tlsKey, "tls-key", os.Getenv("CONFIGHUB_TLS_KEY"), "PEM key of --tls-cert (env CONFIGHUB_TLS_KEY)")
	fs.StringVar(&g.tlsServerName, "tls-server-name", "", "name to verify in the hub's certificate (default: the host of --addr)")
	fs.BoolVar(&g.insecure, "insecure", false, "plaintext (the default when no --tls-* flag is set)")
	fs.StringVar(&g.output, "output", "table", "output: table or json")
	fs.DurationVar(&g.timeout, "timeout", 30*time.Second, "deadline of one request (not of status --watch)")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// cliError is a failure with the command it happened in.
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
	if len(rest) == 0 {
		root.Usage()
		return 2
	}
	cmds := map[string]func(context.Context, *globals, []string, io.Writer, io.Writer) error{
		"push":         cmdPush,
		"status":       cmdStatus,
		"sinks":        cmdSinks,
		"streams":      cmdStreams,
		"config":       cmdConfig,
		"history":      cmdHistory,
		"diff":         cmdDiff,
		"rollback":     cmdRollback,
		"cluster-cert": cmdClusterCert,
	}
	name := rest[0]
	if name == "help" {
		root.Usage()
		return 0
	}
	fn, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "confighubctl: unknown command %q (want push, status, sinks, streams, config, history, diff, rollback or cluster-cert; see --help)\n", name)
		return 2
	}
	err := fn(ctx, &g, rest[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "confighubctl: %s\n", ue.msg)
		return 2
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		ce = &cliError{cmd: name, err: err}
	}
	fmt.Fprintf(stderr, "confighubctl: %s\n", ce.Error())
	return 1
}

// subFlags is a subcommand's flag set, which also takes the globals.
func subFlags(name string, g *globals, errw io.Writer, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("confighubctl "+name, flag.ContinueOnError)
	fs.SetOutput(errw)
	addGlobalsOnto(fs, g)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: confighubctl %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseQuiet parses args; the usage text is printed for --help only, so a
// bad flag is one line like every other failure.
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

// addGlobalsOnto registers the global flags on a subcommand, with the
// values already parsed as defaults, so "status --addr x" works too.
func addGlobalsOnto(fs *flag.FlagSet, g *globals) {
	fs.StringVar(&g.addr, "addr", g.addr, "hub gRPC address (env CONFIGHUB_ADDR)")
	fs.StringVar(&g.token, "token", g.token, "bearer token (env CONFIGHUB_TOKEN)")
	fs.StringVar(&g.tlsCA, "tls-ca", g.tlsCA, "PEM CA of the hub's certificate")
	fs.StringVar(&g.tlsCert, "tls-cert", g.tlsCert, "PEM client certificate (mTLS)")
	fs.StringVar(&g.tlsKey, "tls-key", g.tlsKey, "PEM key of --tls-cert")
	fs.StringVar(&g.tlsServerName, "tls-server-name", g.tlsServerName, "name to verify in the hub's certificate")
	fs.BoolVar(&g.insecure, "insecure", g.insecure, "plaintext")
	fs.StringVar(&g.output, "output", g.output, "output: table or json")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "deadline of one request")
}

// parseSub parses a subcommand's flags; flags may follow positional
// arguments ("sinks delete gw-0 --addr x").
func parseSub(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseQuiet(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v (see --help)", strings.TrimPrefix(fs.Name(), "confighubctl "), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return pos, nil
}

func checkOutput(g *globals) error {
	if g.output != "table" && g.output != "json" {
		return usagef("--output %q: want table or json", g.output)
	}
	return nil
}
