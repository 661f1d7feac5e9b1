package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// FuzzEndpointMemoryFile: any endpoints.json content loads without a panic
// (or is set aside with an error), and what loads can be updated and saved.
func FuzzEndpointMemoryFile(f *testing.F) {
	for _, s := range []string{
		`{"endpoints":{"unix:///run/x.sock":{"prefix":true,"btsp_required":true,"btsp_framing":"json-line","updated":"2026-01-01T00:00:00Z"}}}`,
		`{"endpoints":{"":{"prefix":null}}}`,
		`{"endpoints":null}`,
		`[]`,
		`{"endpoints":{"a":{"updated":"not a time"}}}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "endpoints.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, _ := ipc.OpenEndpointMemory(path)
		if m == nil {
			t.Fatal("no memory")
		}
		ep := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/fuzz.sock"}
		m.Update(ep, func(f *ipc.EndpointFacts) { f.BTSPRequired = !f.BTSPRequired })
		if err := m.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		m2, err := ipc.OpenEndpointMemory(path)
		if err != nil {
			t.Fatalf("reading back what was saved: %v", err)
		}
		if _, ok := m2.Get(ep); !ok {
			t.Fatal("the update was not saved")
		}
	})
}
