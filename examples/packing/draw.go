package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// zoomFrom is where the middle panel starts, as a share of the arrived workload at the end: the
// strategies differ where the cluster fills up, as in the paper's figures.
const zoomFrom = 0.8

// drawPNG writes the PNG: the unallocated GPUs over the whole replay and over its last fifth, and the
// fragmentation measure, in percent of the cluster's GPUs against the arrived workload, one line per
// strategy.
func drawPNG(path, title string, ss []series) error {
	all, zoom, frag := plot.New(), plot.New(), plot.New()
	all.Title.Text = "GPUs unallocated"
	zoom.Title.Text = "GPUs unallocated, as the cluster fills"
	frag.Title.Text = "fragmentation F(M)"
	for _, p := range []*plot.Plot{all, zoom, frag} {
		p.X.Label.Text = "arrived workload (% of cluster GPUs)"
		p.Y.Label.Text = "% of cluster GPUs"
		p.Add(plotter.NewGrid())
	}
	all.Y.Min = 0
	frag.Y.Min = 0
	all.Legend.Top = true
	for i, s := range ss {
		end := s.rows[len(s.rows)-1].arrivedPct
		var xyAll, xyZoom, xyFrag plotter.XYs
		for _, r := range s.rows {
			xyAll = append(xyAll, plotter.XY{X: r.arrivedPct, Y: r.unallocatedPct})
			if r.arrivedPct >= zoomFrom*end {
				xyZoom = append(xyZoom, plotter.XY{X: r.arrivedPct, Y: r.unallocatedPct})
			}
			xyFrag = append(xyFrag, plotter.XY{X: r.arrivedPct, Y: r.fragmentationPct})
		}
		for _, c := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{all, xyAll}, {zoom, xyZoom}, {frag, xyFrag}} {
			if len(c.xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(c.xys)
			if err != nil {
				return fmt.Errorf("%s: %w", s.strategy, err)
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i)
			l.Width = vg.Points(1.5)
			c.p.Add(l)
			if c.p == all {
				c.p.Legend.Add(s.strategy, l)
			}
		}
	}
	img := vgimg.New(14*vg.Inch, 4.5*vg.Inch)
	dc := draw.New(img)
	// The title over the panels, which are drawn below it.
	head := vg.Points(28)
	style := all.Title.TextStyle
	style.Color, style.XAlign, style.YAlign = color.Black, draw.XCenter, draw.YBottom
	dc.FillText(style, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(18)}, title)
	body := draw.Crop(dc, 0, 0, 0, -head)
	canvases := plot.Align([][]*plot.Plot{{all, zoom, frag}}, draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Points(24), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadBottom: vg.Points(6)}, body)
	all.Draw(canvases[0][0])
	zoom.Draw(canvases[0][1])
	frag.Draw(canvases[0][2])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
