package tui

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/ipc"
)

// genAnswer builds a JSON result of about size bytes: objects, arrays,
// strings with escapes and non-ASCII, numbers and literals.
func genAnswer(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.Grow(size + 4096)
	b.WriteString(`{"items":[`)
	words := []string{"beardog", "songbird", "rhizocrypt", "capability", "crypto.sign_ed25519", "héllo", "日本語", "line\\nbreak", "quote\\\"d"}
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
		b.WriteString(`,"tags":["a","b"],"nested":{"a":{"b":[1,2,{"c":-3.5e2}]},"empty":{},"list":[]}}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func benchModel(b testing.TB, w, h int) *model {
	m := newModel(context.Background(), Config{Theme: "dark", Now: fixedNow, EventBuffer: 10000, TraceBuffer: 5000})
	m.update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func fixedNow() time.Time { return time.Date(2026, 11, 22, 12, 1, 3, 0, time.UTC) }

// BenchmarkLargeAnswerFirstFrame measures a 10 MB answer from arrival (the
// raw bytes in hand) to its first drawn frame: pretty-printing and splitting
// (the command), applying the message (Update) and drawing (View).
func BenchmarkLargeAnswerFirstFrame(b *testing.B) {
	data := genAnswer(10 << 20)
	raw := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), data...), '}')
	m := benchModel(b, 160, 48)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp := &ipc.Response{Result: data, Raw: raw, Elapsed: time.Millisecond}
		a := answerOf(m.pc.seq, named("big"), ipc.Request{Method: "big.get"}, time.Now(), resp, nil)
		m.update(answerMsg(a))
		if s := m.render(); !strings.Contains(s, "items") {
			b.Fatal("answer not drawn")
		}
	}
}

// BenchmarkLargeAnswerWhole measures formatting the whole 10 MB answer (in a
// command, while the preview is already on screen) and applying it.
func BenchmarkLargeAnswerWhole(b *testing.B) {
	data := genAnswer(10 << 20)
	m := benchModel(b, 160, 48)
	a := answerOf(0, named("big"), ipc.Request{Method: "big.get"}, time.Now(), &ipc.Response{Result: data}, nil)
	m.update(answerMsg(a))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(fullDocMsg{ans: a, doc: prettyDoc(a.result)})
		_ = m.render()
	}
}

// BenchmarkLargeAnswerScroll measures one page-down and redraw in a 10 MB answer.
func BenchmarkLargeAnswerScroll(b *testing.B) {
	data := genAnswer(10 << 20)
	m := benchModel(b, 160, 48)
	a := answerOf(0, named("big"), ipc.Request{Method: "big.get"}, time.Now(), &ipc.Response{Result: data}, nil)
	m.update(callDoneMsg{ans: a, doc: prettyDoc(a.result)})
	m.setFocus(pResponse)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(tea.KeyPressMsg{Code: tea.KeyPgDown})
		_ = m.render()
	}
}

// BenchmarkEventStreamFrame measures one frame while 10,000 events/s stream
// in: each iteration applies one frame's worth (10,000/DefaultFPS ≈ 333
// events) and draws the screen with the events pane visible.
func BenchmarkEventStreamFrame(b *testing.B) {
	m := benchModel(b, 160, 48)
	m.setFocus(pEvents)
	const perFrame = 10000 / DefaultFPS
	items := make([]any, perFrame)
	for i := range items {
		items[i] = tailLine(fixedNow(), fmt.Sprintf("primal%d", i%7), "", EventKind(1+i%3), "dag.event", []byte(`{"seq":12345,"node":"abc"}`), nil)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(feedMsg{items: items})
		_ = m.render()
	}
}

// BenchmarkStartToFirstFrame measures building the model and drawing the
// first frame with a dozen targets known.
func BenchmarkStartToFirstFrame(b *testing.B) {
	for i := 0; i < b.N; i++ {
		m := newModel(context.Background(), Config{Theme: "dark", Now: fixedNow})
		m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
		m.update(feedMsg{items: sampleTargets()})
		_ = m.render()
	}
}
