// Package charttest renders the project's SVG charts with rsvg-convert and
// reads the pixels back, so that a chart test can check that each series
// is drawn (a line or bars), not merely present in the SVG's text.
package charttest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/skidata/skidata/test/needs"
)

// Render turns svg into a picture with rsvg-convert; a machine without it
// fails the test, naming the package that provides it (under -short the
// test skips, test/needs).
func Render(t testing.TB, svg io.Reader) image.Image {
	t.Helper()
	rsvg := needs.Program(t, "rsvg-convert", "librsvg2-bin")
	cmd := exec.Command(rsvg, "--format", "png")
	cmd.Stdin = svg
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rsvg-convert: %v: %s", err, stderr.String())
	}
	img, err := png.Decode(&out)
	if err != nil {
		t.Fatalf("decode rsvg-convert's PNG: %v", err)
	}
	return img
}

// Columns counts the x columns of img holding a pixel close to the colour
// hex ("#1f77b4"): a line across a panel colours most columns, a bar its
// width, a point or nothing a handful. Anti-aliasing blends a line's edges,
// not its middle.
func Columns(t testing.TB, img image.Image, hex string) int {
	t.Helper()
	return ColumnsWithin(t, img, hex, 24)
}

// ColumnsWithin is Columns with a tolerance of its own on each channel
// (0-255): a small one tells a flat fill (a shaded window) from the
// anti-aliased edge of a line that happens to come close to its colour.
func ColumnsWithin(t testing.TB, img image.Image, hex string, tolerance int) int {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		t.Fatalf("colour %q: %v", hex, err)
	}
	c := color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
	b := img.Bounds()
	n := 0
	for x := b.Min.X; x < b.Max.X; x++ {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, c.R, tolerance) && near(g>>8, c.G, tolerance) && near(bl>>8, c.B, tolerance) {
				n++
				break
			}
		}
	}
	return n
}

func near(a uint32, b uint8, tolerance int) bool {
	d := int(a) - int(b)
	return d > -tolerance && d < tolerance
}
