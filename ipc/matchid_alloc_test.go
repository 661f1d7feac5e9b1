package ipc

import (
	"encoding/json"
	"testing"
)

// TestMatchIDAllocatesNothingOnAMatch: the id of every answer is matched on
// the read path; a match (the number 7, or "7" on the Holon wire) costs no
// allocation (it cost two: the trace's copy of the id and a string of it),
// and the rule stays the same: exact value and type, integers as written.
func TestMatchIDAllocatesNothingOnAMatch(t *testing.T) {
	plain := &Conn{opts: Options{}}
	holon := &Conn{opts: Options{Wire: WireHolon}}
	for _, tc := range []struct {
		c   *Conn
		raw string
	}{{plain, `7`}, {plain, ` 18446744073709551615 `}, {holon, `"7"`}, {holon, `"123456"`}} {
		raw := json.RawMessage(tc.raw)
		if n := testing.AllocsPerRun(100, func() { tc.c.matchID(raw) }); n != 0 {
			t.Errorf("matchID(%s): %.0f allocations", tc.raw, n)
		}
	}
	for _, tc := range []struct {
		c    *Conn
		raw  string
		want uint64
		ok   bool
	}{
		{plain, `7`, 7, true}, {plain, `0`, 0, true}, {plain, `07`, 0, false}, {plain, `7.0`, 0, false},
		{plain, `7e0`, 0, false}, {plain, `-7`, 0, false}, {plain, `"7"`, 0, false},
		{plain, `18446744073709551615`, 18446744073709551615, true}, {plain, `18446744073709551616`, 0, false},
		{plain, `99999999999999999999`, 0, false}, {plain, `null`, 0, false}, {plain, ``, 0, false},
		{holon, `"7"`, 7, true}, {holon, `"\u0037"`, 7, true}, {holon, `"07"`, 0, false}, {holon, `7`, 0, false},
		{holon, `""`, 0, false}, {holon, `"7`, 0, false}, {holon, `"18446744073709551616"`, 0, false},
	} {
		got, ok, why := tc.c.matchID(json.RawMessage(tc.raw))
		if ok != tc.ok || got != tc.want || ok == (why != "") {
			t.Errorf("matchID(%s) on %v = %d %v %q; want %d %v", tc.raw, tc.c.opts.Wire, got, ok, why, tc.want, tc.ok)
		}
	}
}
