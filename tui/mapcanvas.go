package tui

import (
	"strings"

	"charm.land/lipgloss/v2"
)

// ink is how a canvas cell is drawn; when two drawings meet in a cell the
// higher ink wins (a gap's line stays red where it crosses a plain one).
type ink uint8

const (
	inkNone ink = iota
	inkDim
	inkText
	inkOK
	inkAccent
	inkWarn
	inkErr
	inkSel
)

// Line directions a cell joins (a box-drawing rune is chosen from them).
const (
	dirUp uint8 = 1 << iota
	dirDown
	dirLeft
	dirRight
)

// lineStyle is how a line is dashed: solid, or dashed for a degraded edge
// and a gap, so the picture reads without colour too.
type lineStyle uint8

const (
	lineSolid lineStyle = iota
	lineDegraded
	lineGap
)

// boxRunes maps the directions a cell joins to its rune.
var boxRunes = [16]rune{
	0:                                    ' ',
	dirUp:                                '│',
	dirDown:                              '│',
	dirUp | dirDown:                      '│',
	dirLeft:                              '─',
	dirRight:                             '─',
	dirLeft | dirRight:                   '─',
	dirDown | dirRight:                   '╭',
	dirDown | dirLeft:                    '╮',
	dirUp | dirRight:                     '╰',
	dirUp | dirLeft:                      '╯',
	dirUp | dirDown | dirRight:           '├',
	dirUp | dirDown | dirLeft:            '┤',
	dirLeft | dirRight | dirDown:         '┬',
	dirLeft | dirRight | dirUp:           '┴',
	dirUp | dirDown | dirLeft | dirRight: '┼',
}

// canvas is a grid of cells the size of what shows (never of the whole
// map): lines are drawn as the directions each cell joins, text over them,
// and every cell has an ink. Coordinates are the map's; off is the map
// position of the canvas' top left cell, and whatever falls outside is
// dropped.
type canvas struct {
	w, h   int
	ox, oy int
	runes  []rune
	dirs   []uint8
	dash   []lineStyle
	inks   []ink
}

func newCanvas(w, h, ox, oy int) *canvas {
	n := max(w, 0) * max(h, 0)
	return &canvas{w: w, h: h, ox: ox, oy: oy, runes: make([]rune, n), dirs: make([]uint8, n), dash: make([]lineStyle, n), inks: make([]ink, n)}
}

// at is the index of map cell (x, y), or -1 when it does not show.
func (c *canvas) at(x, y int) int {
	x, y = x-c.ox, y-c.oy
	if x < 0 || y < 0 || x >= c.w || y >= c.h {
		return -1
	}
	return y*c.w + x
}

func (c *canvas) mark(i int, d uint8, k ink, ls lineStyle) {
	if i < 0 || c.runes[i] != 0 {
		return // text wins over lines
	}
	c.dirs[i] |= d
	if k > c.inks[i] {
		c.inks[i] = k
	}
	if ls > c.dash[i] {
		c.dash[i] = ls
	}
}

// hline draws a line along row y from x0 to x1 (either order).
func (c *canvas) hline(y, x0, x1 int, k ink, ls lineStyle) {
	if x0 > x1 {
		x0, x1 = x1, x0
	}
	if y < c.oy || y >= c.oy+c.h {
		return
	}
	x0, x1 = max(x0, c.ox-1), min(x1, c.ox+c.w)
	for x := x0; x <= x1; x++ {
		var d uint8
		if x > x0 {
			d |= dirLeft
		}
		if x < x1 {
			d |= dirRight
		}
		c.mark(c.at(x, y), d, k, ls)
	}
}

// vline draws a line down column x from y0 to y1 (either order).
func (c *canvas) vline(x, y0, y1 int, k ink, ls lineStyle) {
	if y0 > y1 {
		y0, y1 = y1, y0
	}
	if x < c.ox || x >= c.ox+c.w {
		return
	}
	y0, y1 = max(y0, c.oy-1), min(y1, c.oy+c.h)
	for y := y0; y <= y1; y++ {
		var d uint8
		if y > y0 {
			d |= dirUp
		}
		if y < y1 {
			d |= dirDown
		}
		c.mark(c.at(x, y), d, k, ls)
	}
}

// text writes s from (x, y), one rune a cell (the map's text is
// sanitized and single-width before it gets here), over any line.
func (c *canvas) text(x, y int, s string, k ink) {
	if y < c.oy || y >= c.oy+c.h || x >= c.ox+c.w {
		return
	}
	for _, r := range s {
		if i := c.at(x, y); i >= 0 {
			c.runes[i], c.inks[i] = r, k
		}
		x++
		if x >= c.ox+c.w {
			return
		}
	}
}

// put writes one rune at (x, y) over any line.
func (c *canvas) put(x, y int, r rune, k ink) {
	if i := c.at(x, y); i >= 0 {
		c.runes[i], c.inks[i] = r, k
	}
}

// cellRune is what cell i shows.
func (c *canvas) cellRune(i int) rune {
	if r := c.runes[i]; r != 0 {
		return r
	}
	d := c.dirs[i]
	switch c.dash[i] {
	case lineDegraded:
		switch d {
		case dirLeft | dirRight, dirLeft, dirRight:
			return '┄'
		case dirUp | dirDown, dirUp, dirDown:
			return '┆'
		}
	case lineGap:
		switch d {
		case dirLeft | dirRight, dirLeft, dirRight:
			return '╌'
		case dirUp | dirDown, dirUp, dirDown:
			return '╎'
		}
	}
	return boxRunes[d&0xf]
}

// lines renders the canvas, one string a row, each run of cells of one
// ink styled once.
func (c *canvas) lines(st *styles) []string {
	out := make([]string, 0, c.h)
	var sb, run strings.Builder
	for y := 0; y < c.h; y++ {
		sb.Reset()
		cur := ink(255)
		flush := func() {
			if run.Len() > 0 {
				if cur == inkNone {
					sb.WriteString(run.String())
				} else {
					sb.WriteString(inkStyle(st, cur).Render(run.String()))
				}
				run.Reset()
			}
		}
		for x := 0; x < c.w; x++ {
			i := y*c.w + x
			k := c.inks[i]
			if k != cur {
				flush()
				cur = k
			}
			run.WriteRune(c.cellRune(i))
		}
		flush()
		out = append(out, sb.String())
	}
	return out
}

// inkStyle is the theme's style for an ink.
func inkStyle(st *styles, k ink) lipgloss.Style {
	switch k {
	case inkDim:
		return st.Dim
	case inkOK:
		return st.OK
	case inkAccent:
		return st.Accent
	case inkWarn:
		return st.Warn
	case inkErr:
		return st.Err
	case inkSel:
		return st.Selected
	}
	return st.Text
}
