package holon_test

import (
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// TestWarningsEscapePeerText: field names a peer sends come back in a
// warning with their controls, bidi controls and invisible characters as
// visible escapes, and bounded.
func TestWarningsEscapePeerText(t *testing.T) {
	frame := `{"jsonrpc":"2.0","id":"1","result":1,"a\u001b[2J":1,"b\u202etxt":2,"c\u200bd":3,"` +
		strings.Repeat("z", 300) + `":4}`
	e := holon.Inspect([]byte(frame))
	var w string
	for _, s := range e.Warnings {
		if strings.HasPrefix(s, "unknown top-level field(s): ") {
			w = strings.TrimPrefix(s, "unknown top-level field(s): ")
		}
	}
	if want := `a\x1b[2J, b\u202etxt, c\u200bd, zzz`; !strings.HasPrefix(w, want) {
		t.Errorf("warning %q, want it to start with %q", w, want)
	}
	if len(w) > 120 || !strings.HasSuffix(w, "…") || !textsafe.IsSafe(w, false) {
		t.Errorf("warning of %d bytes not clipped or not safe: %q", len(w), w)
	}
}
