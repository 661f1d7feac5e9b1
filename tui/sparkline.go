package tui

import "math"

// sparkRunes are the eight heights of a sparkline cell.
var sparkRunes = [...]rune{'▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

// sparkline draws the last w of vals as one row of block runes, scaled
// from zero to the largest value shown (a row of zeros stays flat at the
// lowest block, so "nothing" still reads as a line). A NaN (no sample in
// that slot) is a space. It returns "" when w <= 0 or vals is empty.
//
// Written by hand: ntcharts' sparkline draws a multi-row canvas with its
// own lipgloss styles, and the map needs one row of runes it can style and
// measure with the theme (eight runes and a max: nothing to share).
func sparkline(vals []float64, w int) string {
	if w <= 0 || len(vals) == 0 {
		return ""
	}
	if len(vals) > w {
		vals = vals[len(vals)-w:]
	}
	top := 0.0
	for _, v := range vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v > top {
			top = v
		}
	}
	out := make([]rune, 0, len(vals))
	for _, v := range vals {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			out = append(out, ' ')
		case top <= 0 || v <= 0:
			out = append(out, sparkRunes[0])
		default:
			i := int(math.Round(v / top * float64(len(sparkRunes)-1)))
			out = append(out, sparkRunes[min(max(i, 0), len(sparkRunes)-1)])
		}
	}
	return string(out)
}
