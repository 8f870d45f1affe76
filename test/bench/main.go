package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

type opts struct {
	quick bool
	only  string
	out   string
	runs  int
	// samples is the interleaved rounds of scenarios 1 and 7's small
	// sizes, bigSamples those of the largest upload.
	samples     int
	bigSamples  int
	uploadMax   int
	smallSpan   time.Duration
	smallRounds int
	hubChild    bool   // child mode: a bare hub for memory figures
	hogs        int    // CPU hog processes beside the run
	hogChild    bool   // child mode: one busy core
	watchChild  string // child mode: scenario 5's watchers of this hub address
	pushChild   bool   // child mode: scenario 7's clients
	gateways    int
	konnect     time.Duration
	burst       time.Duration
	cpuprof     string
	mutexprof   string
	trace       string
	fleet       int    // child mode: serve this many emulated gateways
	hubBinary   string // scenario 2 memory: this confighub binary instead of building it
	verbose     bool
	// dataPlanes is scenario 9's emulated data planes; dpChild (with
	// dpCert, dpKey, dpPrefix) runs them in a child against that address.
	dataPlanes                       int
	dpChild, dpCert, dpKey, dpPrefix string
	startTime                        time.Time
	loadStart                        string
}

func main() {
	var o opts
	fs := flag.NewFlagSet("confighub-bench", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: confighub-bench [flags]   (make bench; make bench BENCH_FLAGS=-quick)\n\nMeasures each performance target against its baseline in one run, prints one table and writes\nit as JSON under -out. Scenarios, targets and the latest table: docs/performance.md.\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.BoolVar(&o.quick, "quick", false, "fewer runs, 200 gateways, 3 s burst (about a minute)")
	fs.StringVar(&o.only, "only", "", "comma-separated scenario numbers to run (e.g. 1,4; 1m is scenario 1's memory over repeated uploads); default all")
	fs.StringVar(&o.out, "out", "bench/results", "folder for the JSON results")
	fs.IntVar(&o.runs, "runs", 0, "repetitions of the fast scenarios (default 10, quick 3)")
	fs.IntVar(&o.samples, "samples", 0, "interleaved hub/baseline samples of scenario 1 (default 61, quick 5)")
	fs.IntVar(&o.bigSamples, "big-samples", 0, "samples of scenario 1's largest upload (default 15, quick 3)")
	uploadMiB := fs.Int("upload-mib", 0, "scenario 1's largest upload in MiB (default 200, quick 50)")
	fs.DurationVar(&o.smallSpan, "small-span", time.Second, "length of one round of scenario 7")
	fs.IntVar(&o.smallRounds, "small-rounds", 0, "rounds of scenario 7 (default 9, quick 3)")
	fs.IntVar(&o.gateways, "gateways", 0, "emulated gateways of scenario 2 (default 1000, quick 200)")
	fs.DurationVar(&o.konnect, "konnect-time", 5*time.Second, "how long scenario 6's Konnect upload takes")
	fs.DurationVar(&o.burst, "burst", 0, "scenario 4's push duration (default 10s, quick 3s)")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of the whole run here")
	fs.StringVar(&o.mutexprof, "mutexprofile", "", "write a mutex contention profile of the whole run here")
	fs.StringVar(&o.trace, "trace", "", "write an execution trace of the whole run here (go tool trace -pprof=sched FILE: time goroutines waited to run)")
	fs.BoolVar(&o.verbose, "v", false, "log progress details")
	fs.IntVar(&o.fleet, "fleet", 0, "internal: serve N emulated gateways, print their URLs, run until stdin closes")
	fs.StringVar(&o.hubBinary, "hub-binary", "", "confighub binary for scenario 2's memory rows (default: go build ./cmd/confighub)")
	fs.IntVar(&o.hogs, "hog", 0, "run N busy-loop processes (a CPU hog) beside the whole run")
	fs.BoolVar(&o.hogChild, "hog-child", false, "internal: keep one core busy until stdin closes")
	fs.StringVar(&o.watchChild, "watch-child", "", "internal: run scenario 5's normal watchers of the hub at this address, driven by stdin")
	fs.BoolVar(&o.pushChild, "push-child", false, "internal: run scenario 7's clients, one round per JSON line read from stdin")
	fs.BoolVar(&o.hubChild, "hub-child", false, "internal: serve a bare hub, print its address, report its memory when stdin closes")
	fs.IntVar(&o.dataPlanes, "data-planes", 0, "emulated Kong data planes of scenario 9 (default 10000, quick 1000)")
	fs.StringVar(&o.dpChild, "dp-child", "", "internal: run -data-planes emulated data planes against this cluster listener, driven by stdin")
	fs.StringVar(&o.dpCert, "dp-cert", "", "internal: the data planes' certificate (-dp-child)")
	fs.StringVar(&o.dpKey, "dp-key", "", "internal: its key (-dp-child)")
	fs.StringVar(&o.dpPrefix, "dp-prefix", "dp-", "internal: the data planes' node_id prefix (-dp-child)")
	_ = fs.Parse(os.Args[1:])
	raiseFileLimit()
	if o.dpChild != "" {
		if err := runDPChild(o.dpChild, o.dpCert, o.dpKey, o.dpPrefix, o.dataPlanes, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "dp-child:", err)
			os.Exit(1)
		}
		return
	}

	if o.hogChild {
		runHog(os.Stdin)
		return
	}
	if o.watchChild != "" {
		if err := runWatchChild(o.watchChild, watchers-1, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "watch-child:", err)
			os.Exit(1)
		}
		return
	}
	if o.pushChild {
		if err := runPushChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "push-child:", err)
			os.Exit(1)
		}
		return
	}
	if o.hubChild {
		if err := runHubChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "hub-child:", err)
			os.Exit(1)
		}
		return
	}

	if o.fleet > 0 {
		if err := runFleet(o.fleet, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			os.Exit(1)
		}
		return
	}
	if o.runs == 0 {
		o.runs = 10
		if o.quick {
			o.runs = 3
		}
	}
	// 61 and 15: fewer samples leave the ratios' spread between runs
	// wider than the margins under test (docs/performance.md, Latest
	// table).
	o.samples = orDefault(o.samples, o.quick, 61, 5)
	o.bigSamples = orDefault(o.bigSamples, o.quick, 15, 3)
	o.smallRounds = orDefault(o.smallRounds, o.quick, 9, 3)
	o.uploadMax = orDefault(*uploadMiB, o.quick, 200, 50) << 20
	if o.gateways == 0 {
		o.gateways = 1000
		if o.quick {
			o.gateways = 200
		}
	}
	o.dataPlanes = orDefault(o.dataPlanes, o.quick, 10000, 1000)
	if o.burst == 0 {
		o.burst = 10 * time.Second
		if o.quick {
			o.burst = 3 * time.Second
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "confighub-bench:", err)
		os.Exit(1)
	}
}

// Row is one line of the table.
type Row struct {
	Scenario string  `json:"scenario"`
	Unit     string  `json:"unit"`
	Hub      float64 `json:"hub"`
	Baseline float64 `json:"baseline,omitempty"`
	// Ratio is Hub/Baseline (0 when there is no baseline).
	Ratio  float64 `json:"ratio,omitempty"`
	Target string  `json:"target"`
	OK     bool    `json:"within_target"`
	// Info rows have no target (context for another row).
	Info bool   `json:"info,omitempty"`
	Runs int    `json:"runs"`
	Note string `json:"note,omitempty"`
	// HubSpread and BaseSpread are p10-p90 of the samples; Load is
	// /proc/loadavg when the samples started.
	HubSpread  string `json:"hub_p10_p90,omitempty"`
	BaseSpread string `json:"baseline_p10_p90,omitempty"`
	Load       string `json:"load_avg,omitempty"`
}

// withSpread records the spread of the hub's and the baseline's samples
// and the load average they were taken under.
func (r *Row) withSpread(hub, base []time.Duration, load string) {
	r.HubSpread, r.BaseSpread, r.Load = spreadMS(hub), spreadMS(base), load
}

// orDefault is v, or def (quick when quick is set) when v is 0.
func orDefault(v int, quick bool, def, quickDef int) int {
	switch {
	case v != 0:
		return v
	case quick:
		return quickDef
	}
	return def
}

type scenario struct {
	id   string
	name string
	run  func(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error)
}

func run(ctx context.Context, o opts) error {
	o.startTime = time.Now()
	if o.cpuprof != "" {
		stopProf, err := startCPUProfile(o.cpuprof)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	if o.mutexprof != "" {
		stopProf, err := startMutexProfile(o.mutexprof)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	if o.trace != "" {
		stopTrace, err := startTrace(o.trace)
		if err != nil {
			return err
		}
		defer stopTrace()
	}
	scenarios := []scenario{
		{"1", "push and upload ack vs the minimal durable ack", scenarioPushAck},
		{"1m", "memory over five uploads into a hub holding the previous one (shipped binary)", scenarioRepeatedUploads},
		{"2", "1,000 gateways", scenarioFleet},
		{"3", "hung Konnect", scenarioHungKonnect},
		{"4", "push burst into a slow sink", scenarioBurst},
		{"5", "1,000 watchers, one stalled", scenarioWatchers},
		{"6", "KIC's serial loop", scenarioSerial},
		{"7", "5 KiB pushes, 32 clients in another process, vs a server that fdatasyncs each push", scenarioSmall},
		{"8", "scaling: ack and RSS by config size, fan-out and CPU by sink count", scenarioScaling},
		{"9", "10,000 Kong data planes in hybrid mode vs a plain frame loop", scenarioHybrid},
		{"10", "restart to serving and RSS by stream count, ulimit -n 1024", scenarioRestart},
	}
	want := map[string]bool{}
	for _, s := range strings.Split(o.only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	log := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(o.startTime).Seconds(), fmt.Sprintf(format, a...))
	}
	if o.hogs > 0 {
		stopHogs, err := startHogs(o.hogs)
		if err != nil {
			return err
		}
		defer stopHogs()
	}
	o.loadStart = loadAvg()
	fmt.Fprintf(os.Stderr, "confighub-bench: %s/%s, %d CPUs, %s, quick=%v runs=%d samples=%d gateways=%d, CPU hogs %d, load average %s\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), o.quick, o.runs, o.samples, o.gateways, o.hogs, o.loadStart)
	var rows []Row
	for _, s := range scenarios {
		if len(want) > 0 && !want[s.id] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		log("scenario %s: %s", s.id, s.name)
		r, err := s.run(ctx, o, log)
		if err != nil {
			return fmt.Errorf("scenario %s (%s): %w", s.id, s.name, err)
		}
		rows = append(rows, r...)
		runtime.GC()
	}
	printTable(os.Stdout, rows)
	fmt.Printf("\nload average (1 5 15 min): %s at the start, %s at the end; CPU hog processes beside the run: %d\n", o.loadStart, loadAvg(), o.hogs)
	fmt.Printf("total %.0fs\n", time.Since(o.startTime).Seconds())
	return writeJSON(o, rows)
}

func printTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\thub (median)\tbaseline (median)\tratio\ttarget\twithin target\thub p10-p90\tbaseline p10-p90\tload")
	for _, r := range rows {
		base, ratio, ok := "-", "-", "yes"
		if r.Baseline != 0 {
			base = fmtVal(r.Baseline, r.Unit)
		}
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		if !r.OK {
			ok = "NO"
		}
		if r.Info {
			ok = "(info)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, fmtVal(r.Hub, r.Unit), base, ratio, r.Target, ok,
			dash(r.HubSpread), dash(r.BaseSpread), dash(r.Load))
	}
	_ = tw.Flush()
	var notes []string
	for _, r := range rows {
		if r.Note != "" {
			notes = append(notes, fmt.Sprintf("  %s: %s", r.Scenario, r.Note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtVal(v float64, unit string) string {
	switch unit {
	case "ms":
		if v < 10 {
			return fmt.Sprintf("%.2f ms", v)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	case "":
		return fmt.Sprintf("%g", v)
	case "/s":
		return fmt.Sprintf("%.0f/s", v)
	case "%":
		return fmt.Sprintf("%.0f%%", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

func writeJSON(o opts, rows []Row) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	host, _ := os.Hostname()
	doc := struct {
		Time     time.Time `json:"time"`
		Host     string    `json:"host"`
		CPUs     int       `json:"cpus"`
		Go       string    `json:"go"`
		Quick    bool      `json:"quick"`
		Runs     int       `json:"runs"`
		Gateways int       `json:"gateways"`
		Seconds  float64   `json:"seconds"`
		LoadAt   [2]string `json:"load_avg_start_end"`
		Rows     []Row     `json:"rows"`
	}{o.startTime.UTC(), host, runtime.NumCPU(), runtime.Version(), o.quick, o.runs, o.gateways, time.Since(o.startTime).Seconds(), [2]string{o.loadStart, loadAvg()}, rows}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(o.out, o.startTime.UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	fmt.Printf("results: %s\n", path)
	return nil
}

// median of durations in milliseconds.
func medianMS(d []time.Duration) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return ms(s[n/2])
	}
	return (ms(s[n/2-1]) + ms(s[n/2])) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratioRow builds a row whose target is ratio <= max.
func ratioRow(name, unit string, hub, base float64, max float64, runs int) Row {
	r := Row{Scenario: name, Unit: unit, Hub: hub, Baseline: base, Runs: runs}
	if base > 0 {
		r.Ratio = hub / base
	}
	r.Target = fmt.Sprintf("ratio <= %.2f", max)
	r.OK = r.Ratio <= max
	return r
}

func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}
