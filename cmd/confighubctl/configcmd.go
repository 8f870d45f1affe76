package main

import (
	"context"
	"fmt"
	"io"
	"os"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/config"
)

func cmdConfig(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	if len(args) == 0 || args[0] != "get" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(errw, "Usage: confighubctl config get [--stream s] [--generation n] [--sink NAME] [--failed] [-o FILE]")
			return nil
		}
		return usagef("config: want get")
	}
	fs := subFlags("config get", g, errw, "config get [--stream s] [--generation n] [--sink NAME] [--failed] [-o FILE]")
	stream := fs.String("stream", config.DefaultStream, "stream (ignored with --sink)")
	sinkName := fs.String("sink", "", "what this sink last applied")
	gen := fs.Uint64("generation", 0, "a retained generation of the stream instead of the current one")
	failed := fs.Bool("failed", false, "with --sink: the last configuration the sink failed to apply, with the error and the destination's answer")
	outFile := fs.String("o", "", "write the configuration to this file instead of standard output")
	pos, err := parseSub(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("config get: unexpected argument %q", pos[0])
	}
	if *gen > 0 && *sinkName != "" {
		return usagef("config get: --generation is of a stream, not of --sink")
	}
	if *failed && *sinkName == "" {
		return usagef("config get: --failed needs --sink NAME")
	}
	if err := checkOutput(g); err != nil {
		return err
	}
	c, closeConn, err := dial(g)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	res, err := c.Hub.GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: *stream, Sink: *sinkName, Failed: *failed, Generation: *gen})
	if err != nil {
		return &cliError{"config get", err}
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	// The summary goes to stderr so stdout is the configuration alone
	// (config get > kong.json).
	what := "stream " + res.GetStream()
	if res.GetSink() != "" {
		what = "sink " + res.GetSink() + " (stream " + res.GetStream() + ")"
		if *failed {
			what += " last failed"
		} else {
			what += " last applied"
		}
	}
	red := ""
	if res.GetRedacted() {
		red = ", credentials redacted"
	}
	fmt.Fprintf(errw, "# %s: generation %d, hash %s, %s%s\n", what, res.GetGeneration(), short(res.GetHash()), humanBytes(int64(len(res.GetConfig()))), red)
	if res.GetError() != "" {
		fmt.Fprintf(errw, "# error: %s\n", res.GetError())
	}
	if len(res.GetErrorBody()) > 0 {
		fmt.Fprintf(errw, "# destination's answer:\n%s\n", res.GetErrorBody())
	}
	if *outFile != "" {
		if err := os.WriteFile(*outFile, res.GetConfig(), 0o600); err != nil {
			return &cliError{"config get", err}
		}
		return nil
	}
	_, err = out.Write(res.GetConfig())
	return err
}
