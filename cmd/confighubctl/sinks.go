package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/api/hubclient"
	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/internal/hybrid"
	"github.com/confighub/confighub/internal/sinksfile"
)

func sinksList(fs *flag.FlagSet) func(*invocation, []string) error {
	stream := fs.String("stream", "", "only the sinks of this stream")
	return func(x *invocation, _ []string) error {
		res, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.ListSinksResponse, error) {
			return c.Admin.ListSinks(ctx, &confighubv1.ListSinksRequest{Stream: *stream})
		})
		if err != nil {
			return err
		}
		return x.print(res, func() string {
			sinks := res.GetSinks()
			sort.Slice(sinks, func(i, j int) bool { return sinks[i].GetName() < sinks[j].GetName() })
			return table("NAME\tKIND\tSTREAM\tTARGET", len(sinks), func(i int) []any {
				s := sinks[i]
				return []any{s.GetName(), s.GetKind(), s.GetStream(), target(s)}
			})
		})
	}
}

// table is a tab-aligned table: a header, then n rows of cells.
func table(header string, n int, row func(i int) []any) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for i := range n {
		for j, cell := range row(i) {
			if j > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	return b.String()
}

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

func sinksPut(fs *flag.FlagSet) func(*invocation, []string) error {
	file := fs.String("f", "", "YAML or JSON file: one sink or a list (the shape of PutSink's sink); - reads standard input")
	return func(x *invocation, _ []string) error {
		if *file == "" {
			return usagef("sinks put: -f FILE is required")
		}
		raw, err := readInput(*file)
		if err != nil {
			return &cliError{"sinks put", err}
		}
		sinks, err := sinksfile.ParseOneOrMany(raw)
		if err == nil && len(sinks) == 0 {
			err = fmt.Errorf("no sink in the file")
		}
		if err != nil {
			return &cliError{"sinks put", fmt.Errorf("%s: %w", *file, err)}
		}
		return x.each(len(sinks), func(i int) (proto.Message, string, error) {
			res, err := call(x, "sinks put "+sinks[i].GetName(), func(ctx context.Context, c *hubclient.Client) (*confighubv1.PutSinkResponse, error) {
				return c.Admin.PutSink(ctx, &confighubv1.PutSinkRequest{Sink: sinks[i]})
			})
			verb := "updated"
			if res.GetCreated() {
				verb = "created"
			}
			return res, fmt.Sprintf("sink %s %s\n", res.GetSink().GetName(), verb), err
		})
	}
}

// deleteCmd deletes the named sinks, or one stream (kind "stream").
func deleteCmd(kind, want string) func(*flag.FlagSet) func(*invocation, []string) error {
	return func(*flag.FlagSet) func(*invocation, []string) error {
		return func(x *invocation, names []string) error {
			if len(names) == 0 || kind == "stream" && len(names) != 1 {
				return usagef("%ss delete: want the NAME of %s", kind, want)
			}
			return x.each(len(names), func(i int) (proto.Message, string, error) {
				_, err := call(x, kind+"s delete "+names[i], func(ctx context.Context, c *hubclient.Client) (proto.Message, error) {
					if kind == "stream" {
						return c.Admin.DeleteStream(ctx, &confighubv1.DeleteStreamRequest{Name: names[i]})
					}
					return c.Admin.DeleteSink(ctx, &confighubv1.DeleteSinkRequest{Name: names[i]})
				})
				return &structpb.Struct{Fields: map[string]*structpb.Value{"deleted": structpb.NewStringValue(names[i])}}, kind + " " + names[i] + " deleted\n", err
			})
		}
	}
}

func streamsList(*flag.FlagSet) func(*invocation, []string) error {
	return func(x *invocation, _ []string) error {
		res, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.ListStreamsResponse, error) {
			return c.Admin.ListStreams(ctx, &confighubv1.ListStreamsRequest{})
		})
		if err != nil {
			return err
		}
		return x.print(res, func() string {
			streams := res.GetStreams()
			return table("NAME\tGENERATION\tBYTES\tSINKS\tACCEPTED\tHASH", len(streams), func(i int) []any {
				s := streams[i]
				if s.GetGeneration() == 0 {
					return []any{s.GetName(), "-", "-", s.GetSinks(), "-", "-"}
				}
				return []any{s.GetName(), s.GetGeneration(), s.GetConfigBytes(), s.GetSinks(),
					s.GetAcceptTime().AsTime().UTC().Format(time.RFC3339), short(s.GetHash())}
			})
		})
	}
}

const configSynopsis = "config get [--stream s] [--generation n] [--sink NAME] [--failed] [-o FILE]"

func configGet(fs *flag.FlagSet) func(*invocation, []string) error {
	stream := fs.String("stream", config.DefaultStream, "stream (ignored with --sink)")
	sinkName := fs.String("sink", "", "what this sink last applied")
	gen := fs.Uint64("generation", 0, "a retained generation of the stream instead of the current one")
	failed := fs.Bool("failed", false, "with --sink: the last configuration the sink failed to apply, with the error and the destination's answer")
	outFile := fs.String("o", "", "write the configuration to this file instead of standard output")
	return func(x *invocation, _ []string) error {
		if *gen > 0 && *sinkName != "" {
			return usagef("config get: --generation is of a stream, not of --sink")
		}
		if *failed && *sinkName == "" {
			return usagef("config get: --failed needs --sink NAME")
		}
		res, err := call(x, x.name, func(ctx context.Context, c *hubclient.Client) (*confighubv1.GetConfigResponse, error) {
			return c.Hub.GetConfig(ctx, &confighubv1.GetConfigRequest{Stream: *stream, Sink: *sinkName, Failed: *failed, Generation: *gen})
		})
		if err != nil {
			return err
		}
		if x.g.output == "json" {
			return printJSON(x.out, false, res)
		}
		// The summary goes to stderr: stdout is the configuration alone.
		what := "stream " + res.GetStream()
		if res.GetSink() != "" {
			what = "sink " + res.GetSink() + " (stream " + res.GetStream() + ") last " + map[bool]string{false: "applied", true: "failed"}[*failed]
		}
		red := ""
		if res.GetRedacted() {
			red = ", credentials redacted"
		}
		fmt.Fprintf(x.errw, "# %s: generation %d, hash %s, %s%s\n", what, res.GetGeneration(), short(res.GetHash()), humanBytes(int64(len(res.GetConfig()))), red)
		if res.GetError() != "" {
			fmt.Fprintf(x.errw, "# error: %s\n", res.GetError())
		}
		if len(res.GetErrorBody()) > 0 {
			fmt.Fprintf(x.errw, "# destination's answer:\n%s\n", res.GetErrorBody())
		}
		if *outFile != "" {
			if err := os.WriteFile(*outFile, res.GetConfig(), 0o600); err != nil {
				return &cliError{"config get", err}
			}
			return nil
		}
		_, err = x.out.Write(res.GetConfig())
		return err
	}
}

// clusterCert writes a cluster certificate and key as `kong hybrid gen_cert` does.
func clusterCert(fs *flag.FlagSet) func(*invocation, []string) error {
	certFile := fs.String("cert", "cluster.crt", "certificate file to write (PEM)")
	keyFile := fs.String("key", "cluster.key", "key file to write (PEM, mode 0600)")
	days := fs.Int("days", 3*365, "validity in days (kong hybrid gen_cert's default is 3 years)")
	return func(x *invocation, args []string) error {
		if len(args) > 0 || *days < 1 {
			return usagef("cluster-cert takes no arguments and --days of at least 1")
		}
		certPEM, keyPEM, err := hybrid.GenerateClusterCert(time.Now(), time.Duration(*days)*24*time.Hour)
		if err != nil {
			return err
		}
		files := []struct {
			path string
			b    []byte
			mode os.FileMode
		}{{*keyFile, keyPEM, 0o600}, {*certFile, certPEM, 0o644}}
		for _, f := range files { // both refused before either is written
			if _, err := os.Lstat(f.path); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s exists or cannot be checked (%v): an existing file is not overwritten", f.path, err)
			}
		}
		for i, f := range files {
			err := writeNew(f.path, f.b, f.mode)
			if err != nil {
				if i > 0 {
					_ = os.Remove(files[0].path) // no key without its certificate
				}
				return fmt.Errorf("%w (an existing file is not overwritten)", err)
			}
		}
		fmt.Fprintf(x.out, "wrote %s and %s: the hub's --cluster-cert/--cluster-cert-key and every data plane's cluster_cert/cluster_cert_key\n", *certFile, *keyFile)
		return nil
	}
}

// writeNew writes b to a file that must not exist yet.
func writeNew(path string, b []byte, mode os.FileMode) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = fh.Write(b)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}
