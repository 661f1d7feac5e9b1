package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// servedDemo is `primalscope demo --serve` run as its own process (this
// test binary acting as main), with the stdio bus and its workers that only
// a real process has.
type servedDemo struct {
	Dir    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan error
}

// Stderr is what the demo printed on stderr so far.
func (d *servedDemo) Stderr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

func (d *servedDemo) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.Write(p)
}

// Stop interrupts the demo as Ctrl-C does and waits for it (10 s, then
// kill); it returns how the process ended. Stop is safe to call twice.
func (d *servedDemo) Stop() error {
	if d.cmd.ProcessState == nil {
		_ = d.cmd.Process.Signal(syscall.SIGINT)
	}
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		err := <-d.done
		d.done <- err
		return err
	}
}

// serveDemo starts `demo --serve` with extra arguments and waits for the
// socket directory it prints first; the demo is stopped when t ends.
func serveDemo(t *testing.T, args ...string) *servedDemo {
	t.Helper()
	return serveDemoEnv(t, nil, args...)
}

// serveDemoEnv is serveDemo with more environment (KEY=VALUE, later ones
// win) for the demo's process.
func serveDemoEnv(t *testing.T, env []string, args ...string) *servedDemo {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &servedDemo{done: make(chan error, 1)}
	d.cmd = exec.Command(exe, append([]string{"demo", "--serve"}, args...)...)
	d.cmd.Env = append(append(os.Environ(), "PRIMALSCOPE_TEST_AS_MAIN=1"), env...)
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = d
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
		d.done <- d.cmd.Wait()
	}()
	t.Cleanup(func() { d.Stop() })
	select {
	case d.Dir = <-first:
	case <-time.After(30 * time.Second):
		t.Fatalf("demo --serve printed no directory\n%s", d.Stderr())
	}
	if fi, err := os.Stat(filepath.Join(d.Dir, "beardog.sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("first line %q is not the socket directory: %v\n%s", d.Dir, err, d.Stderr())
	}
	return d
}
