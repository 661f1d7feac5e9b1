package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// FuzzEndpointMemoryRecord: any content of an endpoint's record reads
// without a panic (unusable content is no facts), and the endpoint can be
// updated and saved over it.
func FuzzEndpointMemoryRecord(f *testing.F) {
	for _, s := range []string{
		`{"endpoint":"unix:///run/fuzz.sock","prefix":true,"btsp_required":true,"btsp_framing":"json-line","updated":"2099-01-01T00:00:00Z"}`,
		`{"endpoint":"unix:///run/other.sock","prefix":null}`,
		`{"endpoint":null}`,
		`[]`,
		`{"endpoint":"unix:///run/fuzz.sock","updated":"not a time"}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/fuzz.sock"}
	path := ipc.EndpointRecordPath(dir, ep)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, _ := ipc.OpenEndpointMemory(dir)
		m.Get(ep)
		m.Update(ep, func(f *ipc.EndpointFacts) { f.BTSPRequired = !f.BTSPRequired; f.Framing = "x" })
		if err := m.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		m2, _ := ipc.OpenEndpointMemory(dir)
		if _, ok := m2.Get(ep); !ok {
			t.Fatal("the update was not saved")
		}
	})
}
