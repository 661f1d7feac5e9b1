package ipc_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// BenchmarkEndpointMemoryUpdate: the cost of one fact change in a memory
// kept in a file, with 2,000 endpoints known (a crowded socket directory):
// what reading each probe's first answer pays.
func BenchmarkEndpointMemoryUpdate(b *testing.B) {
	path := filepath.Join(b.TempDir(), "endpoints.json")
	m, err := ipc.OpenEndpointMemory(path)
	if err != nil {
		b.Fatal(err)
	}
	eps := make([]ipc.Endpoint, 2000)
	for i := range eps {
		eps[i] = ipc.Endpoint{Transport: ipc.Unix, Path: fmt.Sprintf("/run/crowd/live%04d.sock", i)}
		m.Update(eps[i], func(f *ipc.EndpointFacts) { f.Framing = "json-line" })
	}
	i := 0
	for b.Loop() {
		m.Update(eps[i%len(eps)], func(f *ipc.EndpointFacts) { f.BTSPRequired = !f.BTSPRequired })
		i++
	}
}
