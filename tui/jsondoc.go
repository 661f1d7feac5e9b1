package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// doc is a pretty-printed JSON document split into lines, with the matching
// bracket of every line that opens or closes an object or array. It is built
// once in a command and read-only afterwards.
type doc struct {
	text  string   // the whole pretty text; lines are substrings of it
	lines []string // lines[i] is a substring of text
	close []int32  // for an opening line, its closing line; else -1
	open  []int32  // for a closing line, its opening line; else -1
	json  bool     // highlight as JSON
	plain bool     // lines are already safe, styled text (diffs, errors)
}

// newDoc splits pretty-printed JSON text and matches its brackets.
func newDoc(text string, isJSON bool) *doc {
	d := &doc{text: text, json: isJSON}
	n := strings.Count(text, "\n") + 1
	d.lines = make([]string, 0, n)
	for len(text) > 0 {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			d.lines = append(d.lines, text)
			break
		}
		d.lines = append(d.lines, text[:i])
		text = text[i+1:]
	}
	if len(d.lines) == 0 {
		d.lines = []string{""}
	}
	d.close = make([]int32, len(d.lines))
	d.open = make([]int32, len(d.lines))
	var stack []int32
	for i, l := range d.lines {
		d.close[i], d.open[i] = -1, -1
		if !isJSON {
			continue
		}
		t := strings.TrimLeft(l, " ")
		if t != "" && (t[0] == '}' || t[0] == ']') && len(stack) > 0 {
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			d.close[o], d.open[i] = int32(i), o
		}
		t = strings.TrimRight(l, " ")
		if t != "" && (t[len(t)-1] == '{' || t[len(t)-1] == '[') {
			stack = append(stack, int32(i))
		}
	}
	return d
}

// textDoc is a document of plain (already safe) lines.
func textDoc(lines []string) *doc {
	d := &doc{lines: lines, plain: true}
	if len(d.lines) == 0 {
		d.lines = []string{""}
	}
	d.close = make([]int32, len(d.lines))
	d.open = make([]int32, len(d.lines))
	for i := range d.lines {
		d.close[i], d.open[i] = -1, -1
	}
	return d
}

// prettyDoc pretty-prints data (plain, no colours: lines are highlighted
// when drawn) and splits it. Invalid JSON is shown sanitized, line by line.
func prettyDoc(data []byte) *doc {
	if len(bytes.TrimSpace(data)) == 0 {
		return textDoc([]string{"(empty)"})
	}
	out, err := render.Format(data, render.Options{Indent: render.DefaultIndent})
	if err != nil {
		var lines []string
		for _, l := range strings.Split(render.SanitizeMultiline(string(data)), "\n") {
			lines = append(lines, render.Sanitize(l))
		}
		lines = append([]string{"(not valid JSON: " + render.Sanitize(err.Error()) + ")"}, lines...)
		return textDoc(lines)
	}
	return newDoc(strings.TrimRight(string(out), "\n"), true)
}

// jqResult runs a jq filter on a parsed value with a time limit.
func jqRun(ctx context.Context, filter string, input any) (*doc, error) {
	q, err := gojq.Parse(filter)
	if err != nil {
		return nil, fmt.Errorf("jq: %w", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jq: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	iter := code.RunWithContext(ctx, input)
	var buf bytes.Buffer
	n := 0
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if e, ok := v.(error); ok {
			var he *gojq.HaltError
			if errors.As(e, &he) && he.Value() == nil {
				break
			}
			if errors.Is(e, context.DeadlineExceeded) {
				return nil, errors.New("jq: took longer than 2 s")
			}
			return nil, fmt.Errorf("jq: %w", e)
		}
		b, err := gojq.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("jq: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		n++
		if buf.Len() > 64<<20 {
			return nil, errors.New("jq: output larger than 64 MiB")
		}
	}
	if n == 0 {
		return textDoc([]string{"(no output)"}), nil
	}
	return prettyDoc(buf.Bytes()), nil
}

// parseForJQ decodes data into the values gojq works on (render.JQInput,
// as the command line's --jq does).
func parseForJQ(data []byte) (any, error) {
	v, err := render.JQInput(data)
	if err != nil {
		return nil, fmt.Errorf("jq input: %w", err)
	}
	return v, nil
}

// searchDoc finds the lines containing q (case-insensitive).
func searchDoc(ctx context.Context, d *doc, q string) []int {
	q = strings.ToLower(q)
	var out []int
	for i, l := range d.lines {
		if i&0xfff == 0 && ctx.Err() != nil {
			return out
		}
		if strings.Contains(strings.ToLower(l), q) {
			out = append(out, i)
			if len(out) >= 100000 {
				break
			}
		}
	}
	return out
}
