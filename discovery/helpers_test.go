package discovery

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// tempDir makes a short temporary directory (Unix socket paths stay under
// 108 bytes) removed when the test ends.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// serve starts a fake server on dir/name, closed when the test ends.
func serve(t testing.TB, dir, name string, cfg ipctest.Config) *ipctest.Server {
	t.Helper()
	s, err := ipctest.Listen(filepath.Join(dir, name), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func primal(name string, level3 bool) *ipctest.Primal {
	return &ipctest.Primal{
		Name: name, Version: "1.0.0", Domain: "x", Format: ipctest.FormatStandard,
		Groups: []ipctest.Group{{Type: "x", Methods: []string{"do", "undo"}}},
		Level3: level3,
		Costs:  map[string]map[string]any{"x.do": {"cpu": "high", "latency_ms": 20}},
		OpDeps: map[string][]string{"x.undo": {"x.do"}},
	}
}

// staleFile leaves a socket file nobody listens on (a crashed primal):
// connecting to it is refused.
func staleFile(t testing.TB, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func envOf(m map[string]string) (func(string) string, func() []string) {
	return func(k string) string { return m[k] }, func() []string {
		var out []string
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		return out
	}
}

func byName(ts []*Target, name string) *Target {
	for _, t := range ts {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func names(ts []*Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
