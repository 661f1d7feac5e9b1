package ipc

// idRing remembers the last n ids added, for answering "have we seen it?".
type idRing struct {
	max  int
	ids  []uint64
	next int
	set  map[uint64]struct{}
}

// newIDRing remembers up to n ids; it allocates as ids arrive, so a Conn
// that makes a handful of calls (a probe) costs a few bytes, not n of them.
func newIDRing(n int) idRing {
	return idRing{max: n, set: make(map[uint64]struct{})}
}

func (r *idRing) add(id uint64) {
	if len(r.ids) < r.max {
		r.ids = append(r.ids, id)
	} else {
		delete(r.set, r.ids[r.next])
		r.ids[r.next] = id
		r.next = (r.next + 1) % len(r.ids)
	}
	r.set[id] = struct{}{}
}

func (r *idRing) has(id uint64) bool { _, ok := r.set[id]; return ok }
