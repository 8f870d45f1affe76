package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/internal/sinksfile"
)

func cmdSinks(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(errw, "Usage: confighubctl sinks list [--stream s] | put -f FILE.yaml | delete NAME")
			return nil
		}
		return usagef("sinks: want list, put -f FILE or delete NAME")
	}
	switch args[0] {
	case "list", "ls":
		return sinksList(ctx, g, args[1:], out, errw)
	case "put", "apply":
		return sinksPut(ctx, g, args[1:], out, errw)
	case "delete", "rm":
		return sinksDelete(ctx, g, args[1:], out, errw)
	}
	return usagef("sinks: unknown subcommand %q (want list, put or delete)", args[0])
}

func sinksList(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("sinks list", g, errw, "sinks list [--stream s]")
	stream := fs.String("stream", "", "only the sinks of this stream")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	res, err := listCall(ctx, g, "sinks list", pos, func(ctx context.Context, c *hubclient.Client) (*confighubv1.ListSinksResponse, error) {
		return c.Admin.ListSinks(ctx, &confighubv1.ListSinksRequest{Stream: *stream})
	})
	if err != nil {
		return err
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	sinks := res.GetSinks()
	sort.Slice(sinks, func(i, j int) bool { return sinks[i].GetName() < sinks[j].GetName() })
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTREAM\tTARGET")
	for _, s := range sinks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.GetName(), s.GetKind(), s.GetStream(), target(s))
	}
	return tw.Flush()
}

// target is where a sink writes, for the list.
func target(s *confighubv1.Sink) string {
	switch {
	case s.GetKong() != nil:
		return s.GetKong().GetAddress()
	case s.GetKongDb() != nil:
		return s.GetKongDb().GetAddress()
	case s.GetKonnect() != nil:
		return s.GetKonnect().GetAddress() + " cp=" + s.GetKonnect().GetControlPlaneId()
	case s.GetFile() != nil:
		return s.GetFile().GetPath()
	case s.GetPlugin() != nil:
		return s.GetPlugin().GetAddress()
	}
	return "-"
}

func sinksPut(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("sinks put", g, errw, "sinks put -f FILE.yaml")
	file := fs.String("f", "", "YAML or JSON file: one sink or a list (the shape of PutSink's sink); - reads standard input")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("sinks put: unexpected argument %q (the file goes in -f)", pos[0])
	}
	if *file == "" {
		return usagef("sinks put: -f FILE is required")
	}
	if err := checkOutput(g); err != nil {
		return err
	}
	var raw []byte
	if *file == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(*file)
	}
	if err != nil {
		return &cliError{"sinks put", err}
	}
	sinks, err := parseSinks(raw)
	if err != nil {
		return &cliError{"sinks put", fmt.Errorf("%s: %w", *file, err)}
	}
	c, closeConn, err := dial(g)
	if err != nil {
		return err
	}
	defer closeConn()
	// With --output json one sink is one object and several are one array
	// (printed even when a later put fails, so the output stays valid
	// JSON and says which were done).
	var done []proto.Message
	defer func() {
		if g.output == "json" && len(done) > 0 {
			_ = printJSONs(out, done, len(sinks) > 1)
		}
	}()
	for _, s := range sinks {
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
		res, err := c.Admin.PutSink(rctx, &confighubv1.PutSinkRequest{Sink: s})
		cancel()
		if err != nil {
			return &cliError{"sinks put " + s.GetName(), err}
		}
		if g.output == "json" {
			done = append(done, res)
			continue
		}
		verb := "updated"
		if res.GetCreated() {
			verb = "created"
		}
		fmt.Fprintf(out, "sink %s %s\n", res.GetSink().GetName(), verb)
	}
	return nil
}

// parseSinks reads one sink (a mapping) or a list of them.
func parseSinks(raw []byte) ([]*confighubv1.Sink, error) {
	sinks, err := sinksfile.ParseOneOrMany(raw) // errors point at the user's lines
	if err != nil {
		return nil, err
	}
	if len(sinks) == 0 {
		return nil, fmt.Errorf("no sink in the file")
	}
	return sinks, nil
}

func sinksDelete(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("sinks delete", g, errw, "sinks delete NAME...")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("sinks delete: want the NAME of a sink")
	}
	c, closeConn, err := dial(g)
	if err != nil {
		return err
	}
	defer closeConn()
	var deleted []map[string]string
	defer func() {
		if g.output == "json" && len(deleted) > 0 {
			var v any = deleted
			if len(pos) == 1 {
				v = deleted[0]
			}
			b, _ := json.MarshalIndent(v, "", "  ")
			fmt.Fprintf(out, "%s\n", b)
		}
	}()
	for _, name := range pos {
		rctx, cancel := context.WithTimeout(ctx, g.timeout)
		_, err := c.Admin.DeleteSink(rctx, &confighubv1.DeleteSinkRequest{Name: name})
		cancel()
		if err != nil {
			return &cliError{"sinks delete " + name, err}
		}
		if g.output == "json" {
			deleted = append(deleted, map[string]string{"deleted": name})
		} else {
			fmt.Fprintf(out, "sink %s deleted\n", name)
		}
	}
	return nil
}
