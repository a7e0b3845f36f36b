// Command relock-plot draws one relock-demo run as a PNG from the samples
// the demo wrote (relock-demo -samples FILE): acquisitions per second and
// the mean wait of the Lock calls that ended, interval by interval, with the
// demo's steps marked and node errors ticked in red. Standard library only
// (image/png and a bitmap font of its own).
//
//	go run ./cmd/relock-plot -in samples.csv -out demo-run.png
//
// `make plot` runs the demo and this in one go.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"strconv"
)

func main() {
	in := flag.String("in", "demo-samples.csv", "samples written by relock-demo -samples")
	out := flag.String("out", "demo-run.png", "the PNG to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "relock-plot:", err)
		os.Exit(1)
	}
}

// sample is one row of the demo's CSV (cumulative counts).
type sample struct {
	t                   float64
	step                string
	acquired            float64
	waitCount, waitSum  float64
	nodeErrors, waiters float64
}

// interval is what happened between two samples.
type interval struct {
	from, to   float64
	step       string
	rate       float64 // acquisitions per second
	meanWait   float64 // seconds; NaN when no Lock call ended
	nodeErrors float64
}

func run(in, out string) error {
	samples, err := read(in)
	if err != nil {
		return err
	}
	ivs := intervals(samples)
	if len(ivs) == 0 {
		return errors.New("no samples after the start")
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(f, render(ivs)); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func read(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	if _, err := r.Read(); err != nil { // the header
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []sample
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) < 8 {
			return nil, fmt.Errorf("%s: %d columns; want 8", path, len(rec))
		}
		var v [8]float64
		for i, s := range rec {
			if i == 1 {
				continue
			}
			if v[i], err = strconv.ParseFloat(s, 64); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		out = append(out, sample{t: v[0], step: rec[1], acquired: v[3], waitCount: v[4], waitSum: v[5], waiters: v[6], nodeErrors: v[7]})
	}
}

// intervals turns cumulative samples into per-interval values, leaving out
// the demo's start (containers starting).
func intervals(samples []sample) []interval {
	var out []interval
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if b.step == "start" || b.t <= a.t {
			continue
		}
		iv := interval{from: a.t, to: b.t, step: b.step, rate: (b.acquired - a.acquired) / (b.t - a.t),
			meanWait: math.NaN(), nodeErrors: b.nodeErrors - a.nodeErrors}
		if n := b.waitCount - a.waitCount; n > 0 {
			iv.meanWait = (b.waitSum - a.waitSum) / n
		}
		out = append(out, iv)
	}
	return out
}

// Layout of the picture, in pixels.
const (
	width, height       = 1000, 560
	left, right         = 80, 20
	top, bottom         = 66, 44
	gap                 = 36
	panelH              = (height - top - bottom - gap) / 2
	labelScale          = 1
	titleScale          = 2
	tickLen             = 4
	axisLabelGap        = 6
	stepLabelOffset     = 4
	nodeErrorTickHeight = 8
)

var (
	white    = color.RGBA{255, 255, 255, 255}
	ink      = color.RGBA{40, 40, 40, 255}
	grid     = color.RGBA{225, 225, 225, 255}
	bandA    = color.RGBA{246, 248, 252, 255}
	bandB    = color.RGBA{236, 241, 248, 255}
	acquireC = color.RGBA{46, 125, 50, 255}
	waitC    = color.RGBA{21, 101, 192, 255}
	errorC   = color.RGBA{198, 40, 40, 255}
)

// panel is one chart: a value per interval, drawn as bars.
type panel struct {
	title string
	unit  float64 // multiply values by this for the axis labels
	value func(interval) float64
	color color.RGBA
	y0    int // top of the plotting area
}

func render(ivs []interval) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	t0, t1 := ivs[0].from, ivs[len(ivs)-1].to
	x := func(t float64) int { return left + int(math.Round((t-t0)/(t1-t0)*float64(width-left-right))) }

	drawText(img, left, 14, "relock demo: acquisitions and lock wait over one run", titleScale, ink)
	panels := []panel{
		{title: "acquisitions per second", unit: 1, value: func(iv interval) float64 { return iv.rate }, color: acquireC, y0: top},
		{title: "mean wait of the lock calls that ended (ms)", unit: 1000, value: func(iv interval) float64 { return iv.meanWait }, color: waitC, y0: top + panelH + gap},
	}
	for i, p := range panels {
		drawSteps(img, ivs, x, p.y0, i == 0)
	}
	for _, p := range panels {
		drawPanel(img, ivs, x, p)
	}
	// Node errors: red ticks along the top panel's baseline.
	base := top + panelH
	for _, iv := range ivs {
		if iv.nodeErrors > 0 {
			fill(img, x(iv.from), base-nodeErrorTickHeight, max(x(iv.to)-x(iv.from), 2), nodeErrorTickHeight, errorC)
		}
	}
	legend := "red: node errors"
	drawText(img, width-right-textWidth(legend, labelScale), base+axisLabelGap+10, legend, labelScale, errorC)
	drawXAxis(img, x, t0, t1, top+2*panelH+gap)
	return img
}

// drawSteps shades each demo step's span in the panel at y0 and, with
// named, names it above the panel: on the first of two rows where the name
// does not run into the one before it (a name may run past a short step).
func drawSteps(img *image.RGBA, ivs []interval, x func(float64) int, y0 int, named bool) {
	start, n := 0, 0
	var rowEnd [2]int
	for i := 1; i <= len(ivs); i++ {
		if i < len(ivs) && ivs[i].step == ivs[start].step {
			continue
		}
		band := bandA
		if n%2 == 1 {
			band = bandB
		}
		x0, x1 := x(ivs[start].from), x(ivs[i-1].to)
		fill(img, x0, y0, x1-x0, panelH, band)
		for row := range rowEnd {
			if name := ivs[start].step; named && x0+2 >= rowEnd[row]+advance {
				drawText(img, x0+2, y0-(row+1)*(glyphH+stepLabelOffset+2), name, labelScale, ink)
				rowEnd[row] = x0 + 2 + textWidth(name, labelScale)
				break
			}
		}
		start, n = i, n+1
	}
}

// drawPanel draws p's bars, its y axis with ticks and its title.
func drawPanel(img *image.RGBA, ivs []interval, x func(float64) int, p panel) {
	peak := 0.0
	for _, iv := range ivs {
		if v := p.value(iv) * p.unit; !math.IsNaN(v) {
			peak = max(peak, v)
		}
	}
	step, ticks := niceTicks(peak)
	scale := float64(panelH) / (step * float64(ticks))
	base := p.y0 + panelH
	for i := 0; i <= ticks; i++ {
		y := base - int(math.Round(float64(i)*step*scale))
		fill(img, left, y, width-left-right, 1, grid)
		label := strconv.FormatFloat(float64(i)*step, 'f', -1, 64)
		drawText(img, left-tickLen-axisLabelGap-textWidth(label, labelScale), y-glyphH/2, label, labelScale, ink)
		fill(img, left-tickLen, y, tickLen, 1, ink)
	}
	for _, iv := range ivs {
		v := p.value(iv) * p.unit
		if math.IsNaN(v) || v <= 0 {
			continue
		}
		h := max(int(math.Round(v*scale)), 1)
		fill(img, x(iv.from), base-h, max(x(iv.to)-x(iv.from), 1), h, p.color)
	}
	fill(img, left, p.y0, 1, panelH+1, ink)
	fill(img, left, base, width-left-right, 1, ink)
	drawText(img, left+4, p.y0+4, p.title, labelScale, p.color)
}

// drawXAxis labels the time axis under the bottom panel at y.
func drawXAxis(img *image.RGBA, x func(float64) int, t0, t1 float64, y int) {
	step, ticks := niceTicks(t1 - t0)
	for i := 0; i <= ticks; i++ {
		t := t0 + float64(i)*step
		if t > t1 {
			break
		}
		px := x(t)
		fill(img, px, y, 1, tickLen, ink)
		label := strconv.FormatFloat(float64(i)*step, 'f', -1, 64)
		drawText(img, px-textWidth(label, labelScale)/2, y+tickLen+2, label, labelScale, ink)
	}
	title := "seconds since the first step"
	drawText(img, (width-textWidth(title, labelScale))/2, y+tickLen+glyphH+10, title, labelScale, ink)
}

// niceTicks picks a tick step of 1, 2 or 5 × 10^k giving about five ticks
// up to at least peak.
func niceTicks(peak float64) (step float64, ticks int) {
	if peak <= 0 {
		return 1, 1
	}
	raw := peak / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return step, int(math.Ceil(peak / step))
}

// fill paints the w × h rectangle at (x, y).
func fill(img *image.RGBA, x, y, w, h int, c color.Color) {
	draw.Draw(img, image.Rect(x, y, x+w, y+h), &image.Uniform{c}, image.Point{}, draw.Src)
}
