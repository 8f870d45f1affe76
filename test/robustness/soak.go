package robustness

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sample is one reading of the hub process.
type Sample struct {
	At         time.Duration // since the soak started
	RSS        float64       // bytes (VmRSS)
	Heap       float64       // bytes (go_memstats_heap_alloc_bytes)
	Goroutines float64       // go_goroutines
	FDs        float64       // open file descriptors
}

// Series names the sampled figures, in CSV and plot order, with the bound
// flatness applies to each: over the last two thirds the least-squares
// line may rise by at most Rel of the window's mean plus Abs.
var Series = []struct {
	Name string
	Rel  float64
	Abs  float64
	Unit string
	get  func(Sample) float64
}{
	{"rss_bytes", 0.10, 8 << 20, "MiB", func(s Sample) float64 { return s.RSS }},
	{"heap_alloc_bytes", 0.25, 4 << 20, "MiB", func(s Sample) float64 { return s.Heap }},
	{"goroutines", 0.05, 10, "", func(s Sample) float64 { return s.Goroutines }},
	{"open_fds", 0.05, 5, "", func(s Sample) float64 { return s.FDs }},
}

// sampleEvery reads the fleet's hub every d until ctx ends; each sample
// also rewrites the CSV at csvPath, so a run cut short keeps its samples.
func sampleEvery(ctx context.Context, d time.Duration, f *Fleet, csvPath string) []Sample {
	start := time.Now()
	var out []Sample
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		if s, err := readSample(ctx, f.HubPID(), f.MetricsURL()); err == nil {
			s.At = time.Since(start)
			out = append(out, s)
			if err := writeCSV(csvPath, out); err != nil {
				f.o.Log("soak: %v", err)
			}
		} else {
			f.o.Log("soak: sample: %v", err)
		}
	}
}

func readSample(ctx context.Context, pid int, metricsURL string) (Sample, error) {
	var s Sample
	if pid == 0 {
		return s, fmt.Errorf("no hub running")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			s.RSS = kb * 1024
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = float64(len(fds))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	var seen int
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_memstats_heap_alloc_bytes":
			s.Heap, _ = strconv.ParseFloat(val, 64)
			seen++
		case "go_goroutines":
			s.Goroutines, _ = strconv.ParseFloat(val, 64)
			seen++
		}
	}
	if seen != 2 {
		return s, fmt.Errorf("%s lacks go_memstats_heap_alloc_bytes or go_goroutines", metricsURL)
	}
	return s, sc.Err()
}

func writeCSV(path string, samples []Sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	head := []string{"elapsed_s"}
	for _, s := range Series {
		head = append(head, s.Name)
	}
	_ = w.Write(head)
	for _, smp := range samples {
		row := []string{strconv.FormatFloat(smp.At.Seconds(), 'f', 1, 64)}
		for _, s := range Series {
			row = append(row, strconv.FormatFloat(s.get(smp), 'f', 0, 64))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Flatness is one series' verdict over the last two thirds of a soak.
type Flatness struct {
	Name      string
	Unit      string
	Samples   int
	Mean      float64
	Growth    float64 // the least-squares line's rise over the window
	Bound     float64
	SlopeHour float64 // the line's slope per hour
	OK        bool
}

func (f Flatness) String() string {
	scale := 1.0
	if f.Unit == "MiB" {
		scale = 1 << 20
	}
	verdict := "flat"
	if !f.OK {
		verdict = "NOT FLAT"
	}
	return fmt.Sprintf("%-16s %s: mean %.1f%s, slope %+.2f%s/h, rise over the last two thirds (%d samples) %+.2f%s, bound %.2f%s",
		f.Name, verdict, f.Mean/scale, f.Unit, f.SlopeHour/scale, f.Unit, f.Samples, f.Growth/scale, f.Unit, f.Bound/scale, f.Unit)
}

// minFlatSamples is the fewest samples in the window a verdict needs.
const minFlatSamples = 6

// flatness fits a least-squares line to each series over the last two
// thirds of the samples: the series is flat when the line rises by at
// most the series' bound (falling is flat).
func flatness(samples []Sample) []Flatness {
	win := samples[len(samples)/3:]
	var out []Flatness
	for _, s := range Series {
		fl := Flatness{Name: s.Name, Unit: s.Unit, Samples: len(win)}
		if len(win) < minFlatSamples {
			out = append(out, fl) // too short to say: not OK
			continue
		}
		var sx, sy, sxx, sxy float64
		for _, smp := range win {
			x, y := smp.At.Seconds(), s.get(smp)
			sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		}
		n := float64(len(win))
		slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		span := win[len(win)-1].At.Seconds() - win[0].At.Seconds()
		fl.Mean = sy / n
		fl.SlopeHour = slope * 3600
		fl.Growth = slope * span
		fl.Bound = s.Rel*fl.Mean + s.Abs
		fl.OK = fl.Growth <= fl.Bound
		out = append(out, fl)
	}
	return out
}

// writePNG draws one panel per series, top to bottom in Series order,
// each scaled to its own range from 0, with a vertical line where the last
// two thirds begin.
func writePNG(path string, samples []Sample) error {
	const w, ph, pad = 900, 160, 10
	h := len(Series) * ph
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	white, grid := color.RGBA{255, 255, 255, 255}, color.RGBA{225, 225, 225, 255}
	colors := []color.RGBA{{200, 40, 40, 255}, {40, 100, 200, 255}, {30, 150, 60, 255}, {150, 80, 180, 255}}
	for y := range h {
		for x := range w {
			img.Set(x, y, white)
		}
	}
	if len(samples) == 0 {
		return savePNG(path, img)
	}
	tmax := samples[len(samples)-1].At.Seconds()
	if tmax == 0 {
		tmax = 1
	}
	xOf := func(t float64) int { return pad + int(t/tmax*float64(w-2*pad-1)) }
	cut := xOf(samples[len(samples)/3].At.Seconds())
	for i, s := range Series {
		top := i * ph
		var vmax float64
		for _, smp := range samples {
			vmax = math.Max(vmax, s.get(smp))
		}
		if vmax == 0 {
			vmax = 1
		}
		yOf := func(v float64) int { return top + ph - pad - int(v/vmax*float64(ph-2*pad-1)) }
		for q := 0; q <= 4; q++ { // quarter lines of the panel's range
			line(img, pad, yOf(vmax*float64(q)/4), w-pad, yOf(vmax*float64(q)/4), grid)
		}
		line(img, cut, top+pad, cut, top+ph-pad, color.RGBA{120, 120, 120, 255})
		for j := 1; j < len(samples); j++ {
			a, b := samples[j-1], samples[j]
			line(img, xOf(a.At.Seconds()), yOf(s.get(a)), xOf(b.At.Seconds()), yOf(s.get(b)), colors[i%len(colors)])
		}
	}
	return savePNG(path, img)
}

// line draws from (x0,y0) to (x1,y1) (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func savePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
