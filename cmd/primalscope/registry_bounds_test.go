package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// A hostile registry: ipc.list names "." and ".." (and thousands more),
// discovery.peers names 2,000 loopback ports, one of them open. ls lists
// within its bounds and says where it cut; nothing connects to the open
// port without --federation; `call ..` is bad usage, not a dial of the
// directory "..".
func TestHostileRegistryBounded(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	names := func(i int) string {
		switch i {
		case 0:
			return "."
		case 1:
			return ".."
		}
		return fmt.Sprintf("flood%06d", i)
	}
	reg, err := ipctest.ListenFloodRegistry(filepath.Join(dir, "songbird.sock"),
		&ipctest.FloodRegistry{Entries: 12_000, Name: names, Peers: 2000, PeerPort: port - 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	env := map[string]string{"HOME": t.TempDir()}

	r := runCLI(t, env, "", "ls", "--socket-dir="+dir, "--no-proc", "--timeout=5s")
	if r.code != exitOK {
		t.Fatalf("ls: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"more than 10000 entries", "only the first 64 were probed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("ls does not say %q:\n%s", want, r.stderr)
		}
	}
	if accepted.Load() != 0 || reg.PeerCalls() != 0 {
		t.Errorf("without --federation: discovery.peers asked %d times, the open port connected %d times", reg.PeerCalls(), accepted.Load())
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "." || f[0] == "..") {
			t.Errorf("ls lists a target named %q", f[0])
		}
	}

	c := runCLI(t, env, "", "call", "--socket-dir="+dir, "--no-history", "..", "health.liveness")
	if c.code != exitUsage || !strings.Contains(c.stderr, "directory") {
		t.Fatalf("call ..: want exit 2 naming a directory, got %+v", c)
	}
}
