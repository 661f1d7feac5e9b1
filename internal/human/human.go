// Package human formats values for people to read: byte counts (Bytes),
// latencies (Duration), text cut to a terminal width (Truncate) and text
// cut to a size in bytes (Clip). It is the one source of each, for
// every layer: it sits below ipc (which formats byte limits in its errors),
// so it imports nothing of primalscope; making peer text safe is
// textsafe.Sanitize's job, beside it.
package human

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Ellipsis marks where Truncate cut text.
const Ellipsis = "…"

// Bytes renders a byte count for people, in powers of 1024 with one decimal
// unless it is whole: "512 B", "4 KiB", "4.5 KiB", "64 MiB", "1.2 GiB".
// A negative count is written as a plain number of bytes.
func Bytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n) / 1024
	u := 0
	// Move up a unit also when rounding to one decimal would give 1024.0.
	for f >= 1023.95 && u < len(units)-1 {
		f /= 1024
		u++
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[u]
}

// Duration renders a latency for people, to three significant digits
// (ten microseconds below 10 ms), in milliseconds below a second and in
// seconds from one: "0.40 ms", "4.52 ms", "45.2 ms", "452 ms", "4.52 s",
// "45.2 s", "452 s". It is at most 7 cells wide below 1,000 s (a column
// of the TUI's targets). No duration measured (zero or less) is "–".
func Duration(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	ms := float64(d) / float64(time.Millisecond)
	// Each bound is where rounding to the digits shown would carry into
	// one more digit (9.996 ms is "10.0 ms", not "10.00 ms").
	switch {
	case ms < 9.995:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 99.95:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms < 999.5:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	}
	s := ms / 1000
	switch {
	case s < 9.995:
		return strconv.FormatFloat(s, 'f', 2, 64) + " s"
	case s < 99.95:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(s, 'f', 0, 64) + " s"
}

// Truncate cuts s to at most width terminal cells, ending it with Ellipsis
// when anything was cut (the ellipsis counts in the width). Width is
// measured by grapheme cluster, so wide characters and emoji are not split,
// and ANSI escape sequences (styles) take no width and are kept. Text that
// fits comes back unchanged. Truncate does not make text safe: give it
// peer text only after textsafe.Sanitize. However wide, text longer than 256 bytes a
// cell (plus 1 KiB) is cut too, so a hostile string of zero-width marks
// cannot make the result large.
func Truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	limit := width*256 + 1024
	if width > 1<<20 || len(s) <= limit {
		if ansi.StringWidth(s) <= width {
			return s
		}
		return ansi.Truncate(s, width, Ellipsis)
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return ansi.Truncate(s[:i], width-1, "") + Ellipsis
}

// Clip cuts s to at most n bytes, ending it with Ellipsis when anything was
// cut (the ellipsis counts in the n bytes), without splitting a UTF-8
// sequence. It bounds how much of a peer's text is kept or repeated (in
// an error, a stored field); to fit text on a screen, use Truncate. For n
// smaller than the ellipsis, the result is the first n bytes that are
// whole characters, unmarked.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut, mark := n-len(Ellipsis), Ellipsis
	if cut < 0 {
		cut, mark = n, ""
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
