package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// Names of the demo's stdio Bus files in the socket directory.
const (
	BusSocket = "stdiobus.sock"
	BusConfig = "stdiobus.json"
)

// busDaemonName is argv[0] of the bus daemon process: discovery finds stdio
// Bus daemons by that name in /proc, reads their --unix and --config, and
// lists one target per pool.
const busDaemonName = "stdio_bus"

// stdioBus runs a stdio Bus daemon on <dir>/stdiobus.sock with two pools of
// real worker processes ("echo": 2 workers, "agent": 1), its config beside
// it. The daemon is this binary re-executed as "stdio_bus --unix ...
// --config ...", so discovery finds it like a real one. It needs a binary
// that can act as worker and daemon (one that calls peer.WorkerMain
// first, as primalscope does); in any other binary the bus is left out.
func (e *Ecosystem) stdioBus() error {
	echo, ok := peer.SelfWorker("echo", "echo", 2, nil)
	if !ok {
		return nil
	}
	agent, _ := peer.SelfWorker("agent", "agent", 1, nil)
	cfg := peer.BusConfig{Pools: []peer.BusPool{echo, agent},
		Limits: peer.BusLimits{MaxInputBuffer: peer.DefaultBusInputBuffer}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("demo: stdio bus config: %w", err)
	}
	cfgPath, sock := e.Path(BusConfig), e.Path(BusSocket)
	if err := os.WriteFile(cfgPath, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("demo: stdio bus config: %w", err)
	}
	stop, err := startBusDaemon(e.ctx, echo.Command, sock, cfgPath)
	if err != nil {
		return err
	}
	e.OnClose(stop)
	for _, p := range cfg.Pools {
		e.AddEntry(Entry{Name: "stdiobus/" + p.ID, Path: sock,
			What: fmt.Sprintf("stdio Bus pool %q, %d worker process(es): --pool %s --session S1 (try session.count, bus.ask, bus.notify)", p.ID, p.Instances, p.ID)})
	}
	return nil
}

// startBusDaemon starts the daemon process and waits until it listens, at
// most 10 s and no longer than ctx lives (the daemon is stopped if ctx ends
// first). The returned stop closes its standard input (the daemon stops its
// workers and exits), and kills it if it lingers.
func startBusDaemon(ctx context.Context, exe, sock, cfgPath string) (stop func(), err error) {
	cmd := &exec.Cmd{
		Path: exe,
		Args: []string{busDaemonName, "--unix", sock, "--config", cfgPath},
		Env: append(os.Environ(), peer.DaemonEnv+"=1",
			"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("demo: stdio bus: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("demo: stdio bus: %w", err)
	}
	cmd.Stdout = outW
	if err := cmd.Start(); err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("demo: start the stdio bus daemon: %w", err)
	}
	outW.Close()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	kill := func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		outR.Close()
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(outR).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("said %q", strings.TrimSpace(line))
		}
		if errors.Is(err, io.EOF) {
			err = errors.New("exited before listening")
		}
		ready <- err
		_, _ = io.Copy(io.Discard, outR) // until the daemon exits
	}()
	select {
	case err := <-ready:
		if err != nil {
			kill()
			return nil, fmt.Errorf("demo: stdio bus daemon: %w", err)
		}
	case <-time.After(10 * time.Second):
		kill()
		return nil, errors.New("demo: stdio bus daemon: not listening after 10 s")
	case <-ctx.Done():
		kill()
		return nil, fmt.Errorf("demo: stdio bus daemon: %w", ctx.Err())
	}
	return kill, nil
}
