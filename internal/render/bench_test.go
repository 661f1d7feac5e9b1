package render

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/internal/sampledoc"
	"github.com/ecoPrimals/primalscope/themes"
)

// benchDoc is a generated ~10 MB JSON-RPC response: nested objects, arrays,
// long and short strings (some with escapes and non-ASCII), numbers and
// literals. It is built once, on first use.
var benchDoc = sync.OnceValue(func() []byte { return genDoc(10 << 20) })

func genDoc(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.Grow(size + 4096)
	b.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"items":[`)
	words := []string{"beardog", "songbird", "rhizocrypt", "capability", "crypto.sign_ed25519", "héllo", "日本語", "line\\nbreak", "tab\\there", "quote\\\"d", "🐿"}
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`,"name":"`)
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteString(`","score":`)
		b.WriteString(strconv.FormatFloat(rng.Float64()*1000, 'f', 3, 64))
		b.WriteString(`,"ok":`)
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
		b.WriteString(`,"tags":[`)
		for j, n := 0, rng.IntN(6); j < n; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + words[rng.IntN(len(words))] + `"`)
		}
		b.WriteString(`],"nested":{"a":{"b":[1,2,{"c":-3.5e2}]},"empty":{},"list":[]}`)
		if i%50 == 0 {
			b.WriteString(`,"blob":"`)
			b.WriteString(strings.Repeat("QUJDREVGR0hJSktMTU5PUA==", 200+rng.IntN(200)))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

func benchPrint(b *testing.B, opts Options) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := JSON(io.Discard, bytes.NewReader(doc), opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlain10MB(b *testing.B) { benchPrint(b, Options{Indent: 2}) }

func BenchmarkCompact10MB(b *testing.B) { benchPrint(b, Options{Indent: 0}) }

func BenchmarkHighlightTrueColor10MB(b *testing.B) {
	th := themes.Dark()
	benchPrint(b, Options{Indent: 2, Colors: &th.JSON, Profile: colorprofile.TrueColor})
}

func BenchmarkHighlight256_10MB(b *testing.B) {
	th := themes.Dark()
	benchPrint(b, Options{Indent: 2, Colors: &th.JSON, Profile: colorprofile.ANSI256})
}

// BenchmarkHighlightTerminal10MB is call's pretty output on a colour
// terminal: highlighted, with invisible characters escaped.
func BenchmarkHighlightTerminal10MB(b *testing.B) {
	th := themes.Dark()
	benchPrint(b, Options{Indent: 2, Colors: &th.JSON, Profile: colorprofile.TrueColor, Terminal: true})
}

// BenchmarkPlainTerminal10MB is call's pretty output on a terminal without
// colour.
func BenchmarkPlainTerminal10MB(b *testing.B) { benchPrint(b, Options{Indent: 2, Terminal: true}) }

// BenchmarkTerminalJSON10MB escapes a 10 MB document for a terminal (--raw
// without colour, the --json outputs).
func BenchmarkTerminalJSON10MB(b *testing.B) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		_ = TerminalJSON(doc)
	}
}

// BenchmarkHighlightLines colours every line of the pretty-printed 10 MB
// document one line at a time, as the TUI does for visible lines.
func BenchmarkHighlightLines10MB(b *testing.B) {
	th := themes.Dark()
	h := NewHighlighter(&th.JSON, colorprofile.TrueColor)
	pretty, err := Format(benchDoc(), Options{Indent: 2})
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(string(pretty), "\n")
	b.SetBytes(int64(len(pretty)))
	b.ReportAllocs()
	buf := make([]byte, 0, 4096)
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			buf = h.AppendLine(buf[:0], l)
		}
	}
}

func BenchmarkSanitize(b *testing.B) {
	s := strings.Repeat("peer text with ümlauts and \x1b[31m escapes\n", 1000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = Sanitize(s)
	}
}

// TestWriteBenchDoc writes the benchmark document to the file named by
// $PRIMALSCOPE_BENCH_DOC, for whole-process comparisons (jq, the CLI).
func TestWriteBenchDoc(t *testing.T) {
	path := os.Getenv("PRIMALSCOPE_BENCH_DOC")
	if path == "" {
		t.Skip("PRIMALSCOPE_BENCH_DOC not set")
	}
	if err := os.WriteFile(path, benchDoc(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// callDoc is a ~10 MB result of many small objects (numbers, booleans,
// nulls, short strings), the shape of bench/ndjsonpeer's bench.sample that
// bench/run.sh prints with `primalscope call` against jq (issue 23).
var callDoc = sync.OnceValue(func() []byte { return sampledoc.Answer(10 << 20) })

// benchCallAnswer prints callDoc from memory, as `primalscope call` prints
// an answer (JSONBytes), to a writer that keeps nothing.
func benchCallAnswer(b *testing.B, opts Options) {
	doc := callDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := JSONBytes(io.Discard, doc, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallAnswer10MB: call's answer piped (plain, pretty).
func BenchmarkCallAnswer10MB(b *testing.B) { benchCallAnswer(b, Options{Indent: DefaultIndent}) }

// BenchmarkCallAnswerColour10MB: call's answer with --color always
// (highlighted, truecolour, piped: not escaped for a terminal).
func BenchmarkCallAnswerColour10MB(b *testing.B) {
	th := themes.Dark()
	benchCallAnswer(b, Options{Indent: DefaultIndent, Colors: &th.JSON, Profile: colorprofile.TrueColor})
}

// BenchmarkCallAnswer10MBOnePrinter is BenchmarkCallAnswer10MB on one
// goroutine (what JSONBytes does with GOMAXPROCS=1), to compare with the
// parts printed in parallel.
func BenchmarkCallAnswer10MBOnePrinter(b *testing.B) {
	doc := callDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		p := newPrinter(io.Discard, Options{Indent: DefaultIndent})
		p.buf, p.end, p.eof = doc, len(doc), true
		if err := p.run(); err != nil {
			b.Fatal(err)
		}
	}
}
