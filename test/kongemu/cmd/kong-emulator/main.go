// Command kong-emulator runs emulated Kong DB-less gateways (Admin API) on
// loopback ports, for trying confighub by hand; with --db-mode, gateways with
// a database (the entity Admin API, also under
// /kic/api/control-planes/<id> for a konnect sink). It is an emulator, not
// Kong: see package test/kongemu for what it checks.
//
//	kong-emulator --listen 127.0.0.1:8001 --count 3
//
// prints one Admin API URL per line. With --cluster-control-plane it starts
// --count emulated Kong data planes in hybrid mode (test/kongemu/dataplane)
// that dial a hub's cluster listener instead, and prints their node ids.
// Faults are set over HTTP, e.g.
//
//	curl -X POST localhost:8001/_emulator/faults -d '{"script":{"method":"POST","path":"/config","steps":[{"status":429,"retry_after":"5"}]}}'
//	curl -X POST localhost:8001/_emulator/faults -d '{"hang":true}'
//	curl -X POST localhost:8001/_emulator/release
//	curl -X POST localhost:8001/_emulator/restart
//	curl localhost:8001/_emulator/state
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/confighub/confighub/test/kongemu"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // the usage was printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kong-emulator:", err)
		stop()
		os.Exit(1)
	}
}

// run serves until ctx ends, printing one gateway URL per line to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kong-emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: kong-emulator [flags]\n\nRuns emulated Kong Admin APIs on loopback (an emulator, not Kong) and prints one URL per line.\nFaults over HTTP: POST /_emulator/faults, /_emulator/release, /_emulator/restart; GET /_emulator/state, /_emulator/requests.\nFlags:\n")
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:0", "address of the first gateway; with --count N the next ones take the following ports (or free ports when the port is 0)")
	count := fs.Int("count", 1, "number of gateways")
	bodyLimit := fs.Int64("body-limit", 0, "answer 413 to /config bodies above this many bytes (0: no limit)")
	oss := fs.Bool("oss", false, "answer Enterprise entities and plugins as Kong OSS does")
	dbMode := fs.Bool("db-mode", false, "emulate a gateway with a database: the entity Admin API (also under /kic/api/control-planes/<id>), POST /config answers 400")
	verbose := fs.Bool("v", false, "log debug messages")
	var dp dpFlags
	addDPFlags(fs, &dp)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count < 1 || *count > 10000 {
		return fmt.Errorf("--count must be between 1 and 10000, got %d", *count)
	}
	host, portStr, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", *listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--listen %q: bad port: %w", *listen, err)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if dp.controlPlane != "" {
		return runDataPlanes(ctx, dp, *count, stdout, logger)
	}

	cache := kongemu.NewCache()
	opts := []kongemu.Option{kongemu.WithCache(cache), kongemu.WithLogger(logger), kongemu.WithBodyLimit(*bodyLimit)}
	if *oss {
		opts = append(opts, kongemu.WithOSS())
	}
	if *dbMode {
		// Each gateway gets its own entity store (DB mode and Konnect paths).
		opts = append(opts, kongemu.WithDBMode())
	}
	var gws []*kongemu.Gateway
	defer func() {
		for _, g := range gws {
			_ = g.Close()
		}
	}()
	for i := 0; i < *count; i++ {
		p := 0
		if port != 0 {
			p = port + i
		}
		gopts := append(opts[:len(opts):len(opts)], kongemu.WithAddr(net.JoinHostPort(host, strconv.Itoa(p))))
		if *dbMode {
			gopts = append(gopts, kongemu.WithRoutes(kongemu.NewEntityAPI().Routes))
		}
		g := kongemu.New(gopts...)
		u, err := g.Start()
		if err != nil {
			return err
		}
		gws = append(gws, g)
		fmt.Fprintln(stdout, u)
	}
	logger.Info("kong-emulator ready (an emulator, not Kong)", "gateways", len(gws))
	<-ctx.Done()
	logger.Info("stopping")
	return nil
}
