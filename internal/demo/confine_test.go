package demo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
)

// TestDemoDiscoveryKeepsToItsOwn: with another stdio Bus daemon running on
// the machine, discovery as the demo configures it lists the demo's own bus
// and not the other one (which unconfined discovery does list).
func TestDemoDiscoveryKeepsToItsOwn(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc: the stdio Bus source reads the process table")
	}
	eco, err := Start(context.Background(), Options{Tick: time.Hour, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	// Another ecosystem's bus, not started by this process: a shell whose
	// argv[0] says stdio_bus (the process table is all discovery reads),
	// forked off by a shell that exits at once, waiting on a builtin read
	// of a pipe this test holds (closing it ends the shell).
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is needed to start a process with another argv[0]")
	}
	other := t.TempDir()
	otherSock := filepath.Join(other, "stdiobus.sock")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	start := exec.Command(bash, "-c", `(exec -a stdio_bus bash -c 'read x <&3' x --unix "$0" >/dev/null 2>&1) & echo $!`, otherSock)
	start.ExtraFiles = []*os.File{pr}
	out, err := start.Output()
	pr.Close()
	if err != nil {
		pw.Close()
		t.Skip(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		pw.Close()
		t.Fatalf("pid %q: %v", out, err)
	}
	defer func() {
		pw.Close() // the read ends, and the shell with it
		time.Sleep(50 * time.Millisecond)
		// Still there (and still that shell, not a new process with its id)?
		if cl, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); err == nil && strings.Contains(string(cl), otherSock) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}()

	sweep := func(confine bool) (mine, theirs int, names []string) {
		o := discovery.Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
			SocketDirs: []string{eco.Dir}, NoRegistries: true,
			Probe: discovery.ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second}}
		if confine {
			eco.Confine(&o)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		snap, err := discovery.New(o).Sweep(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range snap.Targets {
			names = append(names, tg.Name+" "+tg.Address)
			switch {
			case strings.HasPrefix(tg.Address, other):
				theirs++
			case tg.Kind == discovery.KindBus && strings.HasPrefix(tg.Address, eco.Dir):
				mine++
			}
		}
		return mine, theirs, names
	}
	// The premise: the other bus is there to be found.
	found := false
	for i := 0; i < 50 && !found; i++ {
		_, theirs, _ := sweep(false)
		found = theirs > 0
		if !found {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !found {
		t.Fatal("unconfined discovery does not find the other bus: the test proves nothing")
	}
	mine, theirs, names := sweep(true)
	if theirs != 0 || mine != 2 {
		t.Errorf("the demo's discovery lists %d targets of the other bus and %d pools of its own (want 0 and 2):\n%s", theirs, mine, strings.Join(names, "\n"))
	}
}
