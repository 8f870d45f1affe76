package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
)

func cmdStreams(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(errw, "Usage: confighubctl streams list | delete NAME")
			return nil
		}
		return usagef("streams: want list or delete NAME")
	}
	switch args[0] {
	case "list", "ls":
		return streamsList(ctx, g, args[1:], out, errw)
	case "delete", "rm":
		return streamsDelete(ctx, g, args[1:], out, errw)
	}
	return usagef("streams: unknown subcommand %q (want list or delete)", args[0])
}

func streamsList(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("streams list", g, errw, "streams list")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	res, err := listCall(ctx, g, "streams list", pos, func(ctx context.Context, c *hubclient.Client) (*confighubv1.ListStreamsResponse, error) {
		return c.Admin.ListStreams(ctx, &confighubv1.ListStreamsRequest{})
	})
	if err != nil {
		return err
	}
	if g.output == "json" {
		return printJSON(out, res)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGENERATION\tBYTES\tSINKS\tACCEPTED\tHASH")
	for _, s := range res.GetStreams() {
		gen, size, accepted, hash := "-", "-", "-", "-"
		if s.GetGeneration() > 0 {
			gen, size, hash = fmt.Sprint(s.GetGeneration()), fmt.Sprint(s.GetConfigBytes()), short(s.GetHash())
			accepted = s.GetAcceptTime().AsTime().UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.GetName(), gen, size, s.GetSinks(), accepted, hash)
	}
	return tw.Flush()
}

func streamsDelete(ctx context.Context, g *globals, args []string, out, errw io.Writer) error {
	fs := subFlags("streams delete", g, errw, "streams delete NAME")
	pos, err := parseSub(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("streams delete: want the NAME of one stream")
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
	name := pos[0]
	if _, err := c.Admin.DeleteStream(ctx, &confighubv1.DeleteStreamRequest{Name: name}); err != nil {
		return &cliError{"streams delete " + name, err}
	}
	if g.output == "json" {
		b, _ := json.MarshalIndent(map[string]string{"deleted": name}, "", "  ")
		fmt.Fprintf(out, "%s\n", b)
		return nil
	}
	fmt.Fprintf(out, "stream %s deleted\n", name)
	return nil
}
