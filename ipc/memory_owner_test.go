package ipc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/statedir"
)

// The endpoint memory's folders below the state folder follow the one
// state-folder rule (internal/statedir) when written: a records folder that
// is a link (even to a folder inside the state folder) is refused and
// nothing is written through it.
func TestEndpointMemoryWritesNoLinkedFolder(t *testing.T) {
	state := t.TempDir()
	elsewhere := filepath.Join(state, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(state, RecordsDir)); err != nil {
		t.Fatal(err)
	}
	m, _ := OpenEndpointMemory(state)
	m.Update(crowdEndpoint(1), func(f *EndpointFacts) { f.BTSPRequired = true })
	err := m.Flush(context.Background())
	if !errors.Is(err, statedir.ErrUnsafe) {
		t.Fatalf("flush through a linked records folder: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("written through the link: %v", ents)
	}
}

// A bucket folder another local user owns is neither read nor written:
// its records could be swapped for older ones of the user's (a BTSP demand
// rolled back).
func TestEndpointMemoryRefusesForeignFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a folder to another user needs root")
	}
	state := t.TempDir()
	ep := crowdEndpoint(1)
	m, _ := OpenEndpointMemory(state)
	m.Update(ep, func(f *EndpointFacts) { f.BTSPRequired = true })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := EndpointRecordPath(state, ep)
	if err := os.Chown(filepath.Dir(rec), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	r, _ := OpenEndpointMemory(state)
	if f, ok := r.Get(ep); ok {
		t.Fatalf("a record in another user's folder gave facts %+v", f)
	}
	before, _ := os.ReadFile(rec)
	w, _ := OpenEndpointMemory(state)
	w.Update(ep, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := w.Flush(context.Background()); !errors.Is(err, statedir.ErrUnsafe) {
		t.Fatalf("flush into another user's folder: %v", err)
	}
	if after, _ := os.ReadFile(rec); string(after) != string(before) {
		t.Fatalf("written into another user's folder: %s", after)
	}
}
