package human

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 512: "512 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB",
		4 << 10: "4 KiB", 1<<20 - 1: "1 MiB", 64 << 20: "64 MiB", 1288490189: "1.2 GiB",
		5 << 40: "5 TiB", 1<<63 - 1: "8 EiB", -3: "-3 B",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestDuration: three significant digits, milliseconds below a second,
// seconds from one, carried to the next unit where rounding would add a
// digit, never wider than 7 cells below 1,000 s; nothing measured is "–".
func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "–", -time.Second: "–",
		4 * time.Microsecond: "0.00 ms", 400 * time.Microsecond: "0.40 ms", 999 * time.Microsecond: "1.00 ms",
		4520 * time.Microsecond: "4.52 ms", 9996 * time.Microsecond: "10.0 ms", 10 * time.Millisecond: "10.0 ms",
		45240 * time.Microsecond: "45.2 ms", 99960 * time.Microsecond: "100 ms", 452300 * time.Microsecond: "452 ms",
		999600 * time.Microsecond: "1.00 s", time.Second: "1.00 s", 4521 * time.Millisecond: "4.52 s",
		9996 * time.Millisecond: "10.0 s", 45210 * time.Millisecond: "45.2 s", 99960 * time.Millisecond: "100 s",
		452 * time.Second: "452 s", time.Hour: "3600 s",
	} {
		got := Duration(d)
		if got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
		if d < 999*time.Second && len([]rune(got)) > 7 {
			t.Errorf("Duration(%v) = %q: wider than 7 cells", d, got)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s    string
		w    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 10, "hello"},
		{"hello world", 5, "hell…"},
		{"hello", 1, "…"},
		{"hello", 0, ""},
		{"日本語テキスト", 5, "日本…"},   // wide characters are not split
		{"a👩\u200d💻b", 3, "a…"}, // nor is a ZWJ sequence (2 cells)
		{"a👩\u200d💻b", 4, "a👩\u200d💻b"},
		{"\x1b[31mredtext\x1b[0m", 4, "\x1b[31mred…\x1b[0m"}, // styles take no width
		{"", 3, ""},
	} {
		got := Truncate(c.s, c.w)
		if got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.w, got, c.want)
		}
		if w := ansi.StringWidth(got); w > c.w && c.w >= 0 {
			t.Errorf("Truncate(%q, %d) is %d wide", c.s, c.w, w)
		}
	}
}

// A hostile string of combining marks is one cell wide however long it is:
// the result is still bounded in bytes, and valid UTF-8.
func TestTruncateBoundsBytes(t *testing.T) {
	s := "a" + strings.Repeat("\u0301", 1<<20)
	got := Truncate(s, 10)
	if len(got) > 10*256+1024+len(Ellipsis) {
		t.Errorf("%d bytes", len(got))
	}
	if !strings.HasSuffix(got, Ellipsis) || !strings.HasPrefix(got, "a") {
		t.Errorf("not marked as cut: %q…", got[:8])
	}
	if strings.ContainsRune(got, '\uFFFD') {
		t.Error("cut inside a character")
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello world", 8, "hello…"},
		{"héllo", 4, "h…"}, // é is not split: "h" + 3-byte ellipsis
		{"日本語", 7, "日…"},   // 3-byte characters
		{"日本語", 9, "日本語"},
		{"日本語", 2, ""},   // too small for the ellipsis, and for 日
		{"abc", 2, "ab"}, // too small for the ellipsis
		{"abc", 0, ""},
		{"\xff\xfe\xfd\xfc\xfb", 4, "\xff…"}, // invalid UTF-8: each byte is a start
	} {
		got := Clip(c.s, c.n)
		if got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if len(got) > max(c.n, 0) {
			t.Errorf("Clip(%q, %d) is %d bytes", c.s, c.n, len(got))
		}
	}
}
