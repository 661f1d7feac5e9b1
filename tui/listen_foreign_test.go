package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// The biomeOS API's event stream served by another local user is not
// listened to: nothing is sent to it, the events tail says why (a note
// naming the owner), and the TUI does not reopen it.
func TestListenRefusesForeignEventStream(t *testing.T) {
	fp, _ := ipctest.ServeForeign(t, "biomeos-api.sock")
	cfg := goldenConfig("dark")
	cfg.NoListen = false
	m, _ := testModel(t, cfg)
	tg := discovered("unix://"+fp.Path, "biomeos-api", "unix://"+fp.Path, discovery.StateLive)
	run(t, m, m.update(feedMsg{items: added(tg)}))
	said := func() bool {
		for i := 0; i < m.events().ring.Len(); i++ {
			e := m.events().ring.At(i)
			if e.Source == "biomeos-api" && strings.Contains(e.title, "stopped watching") && strings.Contains(e.title+string(e.data), "nobody") {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !said() {
		if time.Now().After(deadline) {
			t.Fatal("the events tail does not say the foreign event stream was refused")
		}
		drainFeed(t, m, 50*time.Millisecond)
	}
	for _, b := range fp.Received() {
		if len(b) > 0 {
			t.Fatalf("the foreign event stream was sent %q", b)
		}
	}
	if n := fp.Connections(); n > 1 {
		t.Fatalf("%d connections: a refused stream is not reopened", n)
	}
}
