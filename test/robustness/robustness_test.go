package robustness

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confighub/confighub/test/etcdtest"
	"github.com/confighub/confighub/test/harness"
)

var (
	seedFlag     = flag.Uint64("robustness.seed", 0, "seed of the random mix (0: a random one, printed)")
	durationFlag = flag.Duration("robustness.duration", 15*time.Second, "how long the faulty mix runs before the fleet settles")
	killFlag     = flag.Duration("robustness.kill-every", 0, "mean time between two kill -9 of the hub (0: a quarter of the duration, at most 20s)")
	modeFlag     = flag.String("robustness.mode", "single", "single (one hub on bbolt) or replica (two replicas on a real etcd server: $CONFIGHUB_ETCD_BIN or etcd on PATH)")
	breakFlag    = flag.String("robustness.break", "", "corrupt one recorded answer before checking, to show that invariant fail: "+invariantList())
	soakFlag     = flag.Duration("robustness.soak", 0, "TestSoak: how long the mix runs while the hub is sampled (0: TestSoak does not run; make soak sets it)")
	sampleFlag   = flag.Duration("robustness.sample-every", 10*time.Second, "TestSoak: time between two samples of the hub")
	historyFlag  = flag.String("robustness.history", "", "write the recorded history as JSON to this file")
	outFlag      = flag.String("robustness.out", "", "TestSoak: folder for soak.csv and soak.png (default: a temporary folder, printed)")
)

func invariantList() string {
	var s []string
	for _, inv := range Invariants {
		s = append(s, string(inv))
	}
	return strings.Join(s, ", ")
}

var (
	buildOnce sync.Once
	bins      *harness.Binaries
	buildErr  error
)

// hubBinary builds the shipped hub once per test binary.
func hubBinary(t *testing.T) string {
	buildOnce.Do(func() { bins, buildErr = harness.Build("cmd/confighub") })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bins.Path("confighub")
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if bins != nil {
		bins.Remove()
	}
	os.Exit(code)
}

// loadAvg is /proc/loadavg's first three fields ("?" where there is none).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// startEtcd runs a real etcd server process: $CONFIGHUB_ETCD_BIN, or etcd
// on PATH (Debian: apt-get install etcd-server).
func startEtcd(t *testing.T) *etcdtest.Process {
	bin := os.Getenv("CONFIGHUB_ETCD_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("etcd"); err != nil {
			t.Fatalf("-robustness.mode replica needs an etcd server binary: set CONFIGHUB_ETCD_BIN or install one (apt-get install -y etcd-server): %v", err)
		}
	}
	return etcdtest.StartProcess(t, bin)
}

func logf(format string, args ...any) { fmt.Printf("robustness: "+format+"\n", args...) }

func seed() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return rand.Uint64()
}

// report prints a run's counts and every check's result, and fails the
// test with the seed and the first broken invariant.
func report(t *testing.T, s uint64, st *Stats, h *History) {
	t.Helper()
	if *breakFlag != "" {
		if err := Corrupt(h, Invariant(*breakFlag)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("break: one recorded answer corrupted for %s\n", *breakFlag)
	}
	fmt.Println(st.String())
	fmt.Printf("load average at the end: %s\n", loadAvg())
	if *historyFlag != "" {
		b, err := json.Marshal(h)
		if err == nil {
			err = os.WriteFile(*historyFlag, b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
	rs := Check(h)
	for _, r := range rs {
		verdict := "ok"
		if !r.OK() {
			verdict = fmt.Sprintf("BROKEN (%d violations)", len(r.Violations))
		}
		fmt.Printf("check %-13s %s (%d checked)\n", r.Invariant, verdict, r.Checked)
		for _, v := range r.Violations {
			fmt.Printf("    %s\n", v)
		}
	}
	if n, of := Unpublished(h); n > 0 {
		fmt.Printf("note: %d of %d acknowledged new generations never reached a watcher (superseded by a newer one before the hub published them)\n", n, of)
	}
	if first := FirstViolation(rs); first != "" {
		t.Fatalf("robustness: seed %d (replay: make robustness SEED=%d): first broken invariant: %s", s, s, first)
	}
	for _, r := range rs {
		if r.Checked == 0 {
			t.Errorf("robustness: seed %d: %s checked nothing", s, r.Invariant)
		}
	}
	fmt.Printf("robustness: seed %d: every invariant holds\n", s)
}

// TestRobustness runs the shipped hub under a random, seeded mix of
// pushers, faulty gateways, resuming watchers and kill -9, then checks the
// recorded history. make test runs it short; make robustness longer.
func TestRobustness(t *testing.T) {
	s := seed()
	kill := *killFlag
	if kill == 0 {
		kill = min(*durationFlag/4, 20*time.Second)
	}
	o := Options{Seed: s, Duration: *durationFlag, HubBin: hubBinary(t), Dir: t.TempDir(), KillEvery: kill, Log: logf}
	mode := "single (bbolt)"
	switch *modeFlag {
	case "single":
	case "replica":
		o.Etcd, o.Replicas = startEtcd(t), 2
		mode = fmt.Sprintf("replica (%d replicas on %s; the killer also kills a replica or restarts etcd)", o.Replicas, o.Etcd)
	default:
		t.Fatalf("-robustness.mode %q: want single or replica", *modeFlag)
	}
	fmt.Printf("robustness: seed %d, mode %s, mix %s, kill -9 every ~%s, load average %s\n", s, mode, *durationFlag, kill, loadAvg())
	ctx, cancel := context.WithTimeout(context.Background(), *durationFlag+3*time.Minute)
	defer cancel()
	f, err := NewFleet(ctx, o)
	if err != nil {
		t.Fatalf("seed %d: %v", s, err)
	}
	defer f.Close()
	h, err := f.Run(ctx)
	if err != nil {
		t.Fatalf("seed %d: %v\nhub output:\n%s", s, err, f.Output())
	}
	report(t, s, &f.Stats, h)
}

// TestSoak runs the same mix without kills for -robustness.soak (make soak),
// sampling the hub's RSS, Go heap, goroutines and open files; each must be
// flat over the last two thirds, and the history must pass the checker.
func TestSoak(t *testing.T) {
	if *soakFlag == 0 {
		t.Skip("make soak runs it (-robustness.soak=10m)")
	}
	s := seed()
	dir := *outFlag
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("soak: seed %d, mode single (bbolt), mix %s without kills, a sample every %s into %s, load average %s\n", s, *soakFlag, *sampleFlag, dir, loadAvg())
	ctx, cancel := context.WithTimeout(context.Background(), *soakFlag+5*time.Minute)
	defer cancel()
	f, err := NewFleet(ctx, Options{Seed: s, Duration: *soakFlag, HubBin: hubBinary(t), Dir: t.TempDir(), PushPause: 400 * time.Millisecond, Log: logf})
	if err != nil {
		t.Fatalf("seed %d: %v", s, err)
	}
	defer f.Close()
	sctx, stop := context.WithTimeout(ctx, *soakFlag)
	defer stop()
	csvPath, pngPath := filepath.Join(dir, "soak.csv"), filepath.Join(dir, "soak.png")
	var samples []Sample
	done := make(chan struct{})
	go func() {
		defer close(done)
		samples = sampleEvery(sctx, *sampleFlag, f, csvPath)
	}()
	h, err := f.Run(ctx)
	<-done
	if err != nil {
		t.Fatalf("seed %d: %v\nhub output:\n%s", s, err, f.Output())
	}
	if err := writeCSV(csvPath, samples); err != nil {
		t.Fatal(err)
	}
	if err := writePNG(pngPath, samples); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("soak: %d samples: %s, %s\n", len(samples), csvPath, pngPath)
	flat := true
	for _, v := range flatness(samples) {
		fmt.Println("soak: " + v.String())
		flat = flat && v.OK
	}
	if !flat {
		t.Errorf("soak: seed %d: not flat over the last two thirds (see above)", s)
	}
	report(t, s, &f.Stats, h)
}
