package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/dial"
)

// TestHelpTargetForms: every TARGET form `help targets` lists resolves
// through the one dialer to the place the help says (in a socket directory
// that holds the sockets the examples name), and README lists it too.
func TestHelpTargetForms(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"beardog.sock", "beardog-westgate-tower-155f.sock", "stdiobus.sock", "floatmail/floatmail.sock"} {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
	if err := os.Symlink("beardog.sock", filepath.Join(dir, "ai.sock")); err != nil {
		t.Fatal(err)
	}
	unix := func(name string) string { return filepath.Join(dir, name) }
	// Where each example goes: endpoint, and pool.
	want := map[string][2]string{
		"beardog":                                      {unix("beardog.sock")},
		"ai":                                           {unix("ai.sock")},
		"beardog-westgate-tower-155f":                  {unix("beardog-westgate-tower-155f.sock")},
		"beardog@westgate-tower-155f":                  {unix("beardog-westgate-tower-155f.sock")},
		"floatmail/floatmail.sock":                     {unix("floatmail/floatmail.sock")},
		"stdiobus/echo":                                {unix("stdiobus.sock"), "echo"},
		"stdio_bus@127.0.0.1:9000/echo":                {"tcp://127.0.0.1:9000", "echo"},
		exampleSocketDir + "/stdiobus.sock/echo":       {unix("stdiobus.sock"), "echo"},
		exampleSocketDir + "/beardog.sock":             {unix("beardog.sock")},
		"unix://" + exampleSocketDir + "/beardog.sock": {unix("beardog.sock")},
		"@beardog":                                     {"@beardog"},
		"tcp://127.0.0.1:9200":                         {"tcp://127.0.0.1:9200"},
		"127.0.0.1:9200":                               {"tcp://127.0.0.1:9200"},
		"ws://127.0.0.1:8080/rpc":                      {"ws://127.0.0.1:8080/rpc"},
		"wss://tower.example/rpc":                      {"wss://tower.example/rpc"},
		`stdio:"beardog server --stdio"`:               {`stdio:"beardog server --stdio"`},
	}
	d, err := dial.New(dial.Settings{Getenv: func(string) string { return "" }, SocketDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	help := runCLI(t, nil, "", "help", "targets").stdout
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range targetForms {
		w, ok := want[f.example]
		if !ok {
			t.Errorf("%s: a form this test does not know: say where it goes", f.example)
			continue
		}
		arg := strings.ReplaceAll(f.example, exampleSocketDir, dir)
		got, err := d.Resolve(ctx, arg)
		if err != nil {
			t.Errorf("%s: %v", f.example, err)
			continue
		}
		if got.Endpoint.String() != w[0] || got.Pool != w[1] {
			t.Errorf("%s: resolves to %s pool %q, want %s pool %q", f.example, got.Endpoint, got.Pool, w[0], w[1])
		}
		if !strings.Contains(help, "  "+f.example+" ") && !strings.Contains(help, "  "+f.example+"\n") {
			t.Errorf("help targets does not list %s", f.example)
		}
		if !strings.Contains(string(readme), "`"+f.example+"`") {
			t.Errorf("README's TARGET paragraph does not list `%s`", f.example)
		}
	}
}
