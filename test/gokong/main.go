// Command gokong runs go-kong's own integration tests against the Kong
// emulator: the kong/*_test.go of the go-kong version go.mod requires,
// written by Kong against a real Kong, are the strongest independent check
// of test/kongemu available without Kong.
//
// It copies go-kong's module out of the module cache (read-only there) into
// a temporary folder, builds its tests with `go test -c ./kong`, builds
// test/kongemu/cmd/kong-emulator, lists the top-level tests and runs each against a
// freshly started `kong-emulator --oss` (a failing test leaves its entities
// behind), in DB mode (--db-mode) and DB-less, and prints one line of
// counts per mode:
//
//	go run ./test/gokong             # the whole suite (make test-gokong)
//	go run ./test/gokong -run 'TestRoutes|TestServices' -v
//
// It exits 1 when a test fails.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// unsetAdminURL are the tests run with KONG_ADMIN_URL unset, as go-kong's
// own CI runs its suite (Kong at the default address): they check that
// default and ask no Kong. Every other test gets its emulator's URL there.
var unsetAdminURL = map[string]bool{"TestBaseRootURL": true}

// mode is one way the emulator is started.
type mode struct {
	name  string
	flags []string
}

var modes = []mode{
	{name: "db", flags: []string{"--db-mode"}},
	{name: "dbless"},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gokong:", err)
		stop()
		os.Exit(1)
	}
}

type options struct {
	run      *regexp.Regexp
	skip     *regexp.Regexp
	modes    []string
	parallel int
	verbose  bool
	timeout  time.Duration
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gokong", flag.ContinueOnError)
	runRe := fs.String("run", "", "run only the top-level tests matching this regexp")
	skipRe := fs.String("skip", "", "skip the top-level tests matching this regexp")
	modesFlag := fs.String("modes", "db,dbless", "emulator modes, comma-separated: db (--db-mode), dbless")
	parallel := fs.Int("parallel", 2, "tests run at once (each against its own emulator)")
	verbose := fs.Bool("v", false, "print the output of every failing test")
	timeout := fs.Duration("timeout", time.Minute, "time limit of one test")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := options{modes: strings.Split(*modesFlag, ","), parallel: max(*parallel, 1), verbose: *verbose, timeout: *timeout}
	var err error
	if o.run, err = regexp.Compile(*runRe); err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	if *skipRe != "" {
		if o.skip, err = regexp.Compile(*skipRe); err != nil {
			return fmt.Errorf("-skip: %w", err)
		}
	}
	for _, m := range o.modes {
		if modeByName(m) == nil {
			return fmt.Errorf("-modes: unknown mode %q (db, dbless)", m)
		}
	}

	tmp, err := os.MkdirTemp("", "gokong-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	suite, err := buildSuite(ctx, tmp)
	if err != nil {
		return err
	}
	emulator := filepath.Join(tmp, "kong-emulator")
	if err := goCmd(ctx, "", "build", "-o", emulator, "./test/kongemu/cmd/kong-emulator"); err != nil {
		return fmt.Errorf("building the emulator: %w", err)
	}
	names, err := listTests(ctx, suite)
	if err != nil {
		return err
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		return !o.run.MatchString(n) || (o.skip != nil && o.skip.MatchString(n))
	})

	failures := 0
	for _, mn := range o.modes {
		m := modeByName(mn)
		start := time.Now()
		results := runAll(ctx, o, suite, emulator, *m, names)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var passed, failed, skipped int
		var fails []string
		for _, r := range results {
			switch r.outcome {
			case pass:
				passed++
			case skip:
				skipped++
			default:
				failed++
				failures++
				fails = append(fails, r.name)
				if o.verbose {
					fmt.Fprintf(stdout, "=== %s (%s)\n%s\n", r.name, m.name, r.output)
				}
			}
		}
		fmt.Fprintf(stdout, "%s: %d passed, %d failed, %d skipped (%s)\n", m.name, passed, failed, skipped, time.Since(start).Round(time.Second))
		for _, f := range fails {
			fmt.Fprintf(stdout, "  FAIL %s\n", f)
		}
	}
	if failures > 0 {
		return fmt.Errorf("%d failures", failures)
	}
	return nil
}

func modeByName(n string) *mode {
	for i := range modes {
		if modes[i].name == n {
			return &modes[i]
		}
	}
	return nil
}

// goCmd runs the go command in dir ("" for the current folder), its output
// on stderr.
func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "GOWORK=off")
	return cmd.Run()
}

// buildSuite copies go-kong's module (the version go.mod requires) into
// tmp and builds its tests; it returns the test binary's path.
func buildSuite(ctx context.Context, tmp string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/kong/go-kong").Output()
	if err != nil {
		return "", fmt.Errorf("go mod download github.com/kong/go-kong: %w", err)
	}
	var mod struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download github.com/kong/go-kong: %s", mod.Error)
	}
	src := filepath.Join(tmp, "go-kong")
	if err := copyTree(mod.Dir, src); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "kong.test")
	if err := goCmd(ctx, src, "test", "-c", "-o", bin, "./kong"); err != nil {
		return "", fmt.Errorf("building go-kong %s's tests: %w", mod.Version, err)
	}
	return bin, nil
}

// copyTree copies the regular files under from into to, writable.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// listTests is the suite's top-level tests (not its examples, benchmarks
// or fuzz targets).
func listTests(ctx context.Context, suite string) ([]string, error) {
	out, err := exec.CommandContext(ctx, suite, "-test.list", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the tests: %w", err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Test") {
			names = append(names, l)
		}
	}
	return names, nil
}

type outcome int

const (
	fail outcome = iota
	pass
	skip
)

type result struct {
	name    string
	outcome outcome
	output  string
}

// runAll runs names, o.parallel at a time, and returns their results in
// the order of names.
func runAll(ctx context.Context, o options, suite, emulator string, m mode, names []string) []result {
	results := make([]result, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range o.parallel {
		wg.Go(func() {
			for i := range next {
				results[i] = runOne(ctx, o, suite, emulator, m, names[i])
			}
		})
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// runOne starts a fresh emulator, runs one top-level test against it and
// stops the emulator.
func runOne(ctx context.Context, o options, suite, emulator string, m mode, name string) result {
	r := result{name: name}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	emu := exec.CommandContext(ctx, emulator, append([]string{"--oss", "--listen", "127.0.0.1:0"}, m.flags...)...)
	var emuLog strings.Builder
	emu.Stderr = &emuLog
	emuOut, err := emu.StdoutPipe()
	if err != nil {
		r.output = err.Error()
		return r
	}
	if err := emu.Start(); err != nil {
		r.output = err.Error()
		return r
	}
	defer func() {
		_ = emu.Process.Signal(os.Interrupt)
		_ = emu.Wait()
	}()
	line, err := bufio.NewReader(emuOut).ReadString('\n')
	if err != nil {
		// Its log is read once it has exited (exec writes it until then).
		_ = emu.Process.Kill()
		_ = emu.Wait()
		r.output = fmt.Sprintf("the emulator printed no URL: %v\n%s", err, emuLog.String())
		return r
	}
	go func() { _, _ = io.Copy(io.Discard, emuOut) }()

	test := exec.CommandContext(ctx, suite, "-test.run", "^"+regexp.QuoteMeta(name)+"$", "-test.v", "-test.count=1")
	test.Dir = filepath.Join(filepath.Dir(suite), "go-kong", "kong")
	test.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KONG_ADMIN_URL=") })
	if !unsetAdminURL[name] {
		test.Env = append(test.Env, "KONG_ADMIN_URL="+strings.TrimSpace(line))
	}
	out, _ := test.CombinedOutput()
	r.output = string(out)
	switch {
	case strings.Contains(r.output, "--- FAIL: "+name+" "):
	case strings.Contains(r.output, "--- PASS: "+name+" "):
		r.outcome = pass
	case strings.Contains(r.output, "--- SKIP: "+name+" "):
		r.outcome = skip
	}
	return r
}
