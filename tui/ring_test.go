package tui

import (
	"testing"
	"unsafe"
)

// TestRingGrowsAsItemsArrive: a ring that is not full holds room for
// about what it holds, not its whole size (the events pane's 10,000 lines
// were 2.4 MiB allocated before the first event); once full it keeps the
// newest size items, oldest first, and counts what it dropped; Clear gives
// the room back.
func TestRingGrowsAsItemsArrive(t *testing.T) {
	const size = 10000
	r := newRing[line](size)
	for i := range 10 {
		r.Append(line{title: string(rune('a' + i))})
	}
	held := uintptr(cap(r.buf)) * unsafe.Sizeof(line{})
	if cap(r.buf) > 2*ringFirst {
		t.Errorf("a ring of %d holding 10 lines holds room for %d (%d B); want at most %d", size, cap(r.buf), held, 2*ringFirst)
	}
	if r.Len() != 10 || r.At(0).title != "a" || r.At(9).title != "j" {
		t.Errorf("10 lines in: Len %d, first %q, last %q", r.Len(), r.At(0).title, r.At(r.Len()-1).title)
	}

	ri := newRing[int](size)
	for i := range 25000 {
		ri.Append(i)
		if n := min(i+1, size); ri.Len() != n || *ri.At(0) != i+1-n || *ri.At(n - 1) != i {
			t.Fatalf("after %d appended: Len %d, first %d, last %d; want %d, %d, %d", i+1, ri.Len(), *ri.At(0), *ri.At(ri.Len() - 1), n, i+1-n, i)
		}
	}
	if cap(ri.buf) != size || ri.dropped != 15000 || ri.total != 25000 {
		t.Errorf("full: room %d, dropped %d, total %d; want %d, 15000, 25000", cap(ri.buf), ri.dropped, ri.total, size)
	}
	ri.Clear()
	if ri.Len() != 0 || cap(ri.buf) != 0 {
		t.Errorf("cleared: Len %d, room %d; want 0, 0", ri.Len(), cap(ri.buf))
	}
	ri.Append(7)
	if ri.Len() != 1 || *ri.At(0) != 7 {
		t.Errorf("after Clear and one append: Len %d, first %d", ri.Len(), *ri.At(0))
	}
}
