package tui

import (
	"fmt"
	"testing"
)

// BenchmarkEventStreamFrameFiltered is BenchmarkEventStreamFrame with a
// text filter on the events tail that few events match: each frame
// applies 333 events and draws the tail over a full 10,000-event ring.
func BenchmarkEventStreamFrameFiltered(b *testing.B) {
	m := benchModel(b, 160, 48)
	m.setFocus(pEvents)
	const perFrame = 10000 / DefaultFPS
	items := make([]any, perFrame)
	for i := range items {
		name := "dag.event"
		if i%50 == 0 {
			name = "dag.rare"
		}
		items[i] = tailLine(fixedNow(), fmt.Sprintf("primal%d", i%7), "", EventKind(1+i%3), name, []byte(`{"seq":12345,"node":"abc"}`), nil)
	}
	for i := 0; i < 31; i++ { // fill the ring
		m.update(feedMsg{items: items})
	}
	for _, k := range press("/", "rare", "enter") {
		m.update(k)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(feedMsg{items: items})
		_ = m.render()
	}
}
