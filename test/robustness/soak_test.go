package robustness

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func series(n int, f func(i int) float64) []Sample {
	out := make([]Sample, n)
	for i := range out {
		v := f(i)
		out[i] = Sample{At: time.Duration(i) * 10 * time.Second, RSS: v * (1 << 20), Heap: v * (1 << 20), Goroutines: v, FDs: v}
	}
	return out
}

// TestFlatness: a series that rises steadily over the last two thirds is
// not flat; one that rises at first, then saws around a level, is; a run
// too short to tell is not flat.
func TestFlatness(t *testing.T) {
	rising := flatness(series(60, func(i int) float64 { return 100 + 2*float64(i) }))
	warmThenSaw := flatness(series(60, func(i int) float64 {
		if i < 20 {
			return float64(5 * i)
		}
		return 100 + float64(i%3)
	}))
	short := flatness(series(5, func(int) float64 { return 100 }))
	for k := range Series {
		if rising[k].OK {
			t.Errorf("%s: a rise of %.0f per window passed (bound %.0f)", rising[k].Name, rising[k].Growth, rising[k].Bound)
		}
		if !warmThenSaw[k].OK {
			t.Errorf("%s: a level after warm-up failed: %s", warmThenSaw[k].Name, warmThenSaw[k])
		}
		if short[k].OK {
			t.Errorf("%s: %d samples gave a verdict", short[k].Name, short[k].Samples)
		}
	}
}

// TestPlotAndCSV: the plot is a PNG with a panel per series.
func TestPlotAndCSV(t *testing.T) {
	dir := t.TempDir()
	s := series(30, func(i int) float64 { return float64(i % 7) })
	if err := writeCSV(filepath.Join(dir, "soak.csv"), s); err != nil {
		t.Fatal(err)
	}
	if err := writePNG(filepath.Join(dir, "soak.png"), s); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "soak.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if h := img.Bounds().Dy(); h != len(Series)*160 {
		t.Errorf("plot height %d, want a 160 px panel per series (%d)", h, len(Series)*160)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "soak.csv"))
	if want := "elapsed_s,rss_bytes,heap_alloc_bytes,goroutines,open_fds\n"; len(b) < len(want) || string(b[:len(want)]) != want {
		t.Errorf("csv header: %q", b[:min(len(b), 80)])
	}
}
