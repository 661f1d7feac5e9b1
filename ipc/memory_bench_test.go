package ipc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// BenchmarkEndpointMemoryUpdate: the cost of one fact change in a memory
// kept in a folder, with 2,000 endpoints known (a crowded socket
// directory): what reading each probe's first answer pays.
func BenchmarkEndpointMemoryUpdate(b *testing.B) {
	m, _ := ipc.OpenEndpointMemory(b.TempDir())
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

// BenchmarkEndpointMemoryGet: what a one-shot call pays to learn about its
// one endpoint from a fresh process, with none remembered and with 16,000
// remembered: the same, one record read by name.
func BenchmarkEndpointMemoryGet(b *testing.B) {
	for _, n := range []int{0, 16000} {
		b.Run(fmt.Sprintf("remembered=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			w, _ := ipc.OpenEndpointMemory(dir)
			yes := true
			for i := 0; i < n; i++ {
				w.Update(ipc.Endpoint{Transport: ipc.Unix, Path: fmt.Sprintf("/run/crowd/live%05d.sock", i)}, func(f *ipc.EndpointFacts) { f.Prefix = &yes })
			}
			if err := w.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			ep := ipc.Endpoint{Transport: ipc.Unix, Path: fmt.Sprintf("/run/crowd/live%05d.sock", max(n-1, 0))}
			for b.Loop() {
				m, _ := ipc.OpenEndpointMemory(dir)
				if _, ok := m.Get(ep); !ok && n > 0 {
					b.Fatal("not remembered")
				}
			}
		})
	}
}
