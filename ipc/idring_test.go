package ipc

import "testing"

func TestIDRingForgetsTheOldest(t *testing.T) {
	r := newIDRing(3)
	for id := uint64(1); id <= 5; id++ {
		r.add(id)
	}
	for id, want := range map[uint64]bool{1: false, 2: false, 3: true, 4: true, 5: true} {
		if r.has(id) != want {
			t.Fatalf("has(%d) = %v, want %v", id, !want, want)
		}
	}
	if len(r.set) != 3 || len(r.ids) != 3 {
		t.Fatalf("ring holds %d ids in a map of %d", len(r.ids), len(r.set))
	}
}
