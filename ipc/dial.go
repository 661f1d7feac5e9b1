package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultConnectTimeout bounds establishing a transport unless told otherwise.
const DefaultConnectTimeout = 2 * time.Second

// Dial opens ep and returns a Conn over it. ctx bounds only the dialling;
// once Dial returns, the Conn lives until Close or the peer ends it.
func Dial(ctx context.Context, ep Endpoint, opts Options) (*Conn, error) {
	if opts.Endpoint == "" {
		opts.Endpoint = ep.String()
	}
	if (ep.Transport == WS || ep.Transport == WSS) && opts.Wire == WireJSONRPC {
		opts.Wire = WireHolon // Holon-RPC wants string ids and "params":{}
	}
	f, err := DialFramer(ctx, ep, opts)
	if err != nil {
		return nil, err
	}
	return NewConn(f, opts), nil
}

// DialFramer opens ep and returns the framer a Conn would use.
func DialFramer(ctx context.Context, ep Endpoint, opts Options) (Framer, error) {
	switch ep.Transport {
	case Unix, Abstract, TCP:
		return dialSocket(ctx, ep, opts) // riboCipher prefix and BTSP: secure.go
	case Stdio:
		return dialStdio(ep, opts)
	case WS, WSS:
		return dialHolon(ctx, ep, opts) // ws_dial.go
	}
	return nil, &DialError{Endpoint: ep.String(), Err: fmt.Errorf("unknown transport %q", ep.Transport)}
}

// DialStream connects a socket endpoint (unix, abstract, tcp) within timeout
// (DefaultConnectTimeout when zero) and the ctx deadline.
func DialStream(ctx context.Context, ep Endpoint, timeout time.Duration) (net.Conn, error) {
	network, addr := ep.Network()
	if network == "" {
		return nil, &DialError{Endpoint: ep.String(), Err: fmt.Errorf("%s is not a socket transport", ep.Transport)}
	}
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, &DialError{Endpoint: ep.String(), Err: explainDial(err)}
	}
	return c, nil
}

// explainDial turns the common dial failures into words a person can act on,
// keeping the original error for errors.Is.
func explainDial(err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("no socket there: %w", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing is listening (a stale socket file?): %w", err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("permission denied: %w", err)
	case errors.Is(err, syscall.ENOTSOCK):
		return fmt.Errorf("not a socket: %w", err)
	}
	return err
}

// stdioProc owns a spawned command: its stdin, stdout, stderr reader and exit.
// stdout and stderr are plain os.Pipes (not exec's pipes, which Wait closes
// under a reader that may still hold the child's last answer).
type stdioProc struct {
	cmd      *exec.Cmd
	stdout   *os.File
	stderr   *os.File
	stderrWG sync.WaitGroup
	errDone  chan struct{} // closed when stderr has been read to its end
	exited   chan struct{}
	waitErr  error
	tailMu   sync.Mutex
	tail     []string // last lines of stderr, for error messages
}

func dialStdio(ep Endpoint, opts Options) (Framer, error) {
	if len(ep.Argv) == 0 {
		return nil, &DialError{Endpoint: ep.String(), Err: errors.New("no command")}
	}
	cmd := exec.Command(ep.Argv[0], ep.Argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, &DialError{Endpoint: ep.String(), Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, &DialError{Endpoint: ep.String(), Err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, &DialError{Endpoint: ep.String(), Err: err}
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		stdin.Close()
		return nil, &DialError{Endpoint: ep.String(), Err: fmt.Errorf("start %s: %w", ep.Argv[0], err)}
	}
	p := &stdioProc{cmd: cmd, stdout: outR, stderr: errR, exited: make(chan struct{}), errDone: make(chan struct{})}
	p.stderrWG.Add(1)
	go p.readStderr(errR, opts.Trace)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	f := NewLineFramer(&stdioReader{p: p}, stdin, stdin, opts.MaxFrame)
	f.extra = p.stop
	return f, nil
}

func (p *stdioProc) readStderr(r io.Reader, trace func(TraceEvent)) {
	defer p.stderrWG.Done()
	defer close(p.errDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		p.tailMu.Lock()
		p.tail = append(p.tail, string(cut(line, 200)))
		if len(p.tail) > 5 {
			p.tail = p.tail[1:]
		}
		p.tailMu.Unlock()
		if trace != nil {
			trace(TraceEvent{Time: time.Now(), Dir: Stderr, Data: line, Size: len(line)})
		}
	}
	// Drain what the scanner refused (an over-long line) so the child never blocks.
	_, _ = io.Copy(io.Discard, r)
}

// stop ends the process once its stdin is closed: it gets a moment to exit on
// its own (500 ms, less if ctx ends first), then its process group is
// killed; then the pipes are closed, which unblocks the readers, and the
// stderr reader is waited for.
func (p *stdioProc) stop(ctx context.Context) error {
	var err error
	grace := time.NewTimer(500 * time.Millisecond)
	defer grace.Stop()
	select {
	case <-p.exited:
	case <-ctx.Done():
	case <-grace.C:
	}
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			err = fmt.Errorf("process %d did not exit after SIGKILL", p.cmd.Process.Pid)
		}
	}
	p.stdout.Close()
	p.stderr.Close()
	p.stderrWG.Wait()
	return err
}

// stdioReader reads the child's stdout; at its end it reports how the child
// exited and what it last wrote to stderr.
type stdioReader struct{ p *stdioProc }

func (r *stdioReader) Read(b []byte) (int, error) {
	n, err := r.p.stdout.Read(b)
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
		select {
		case <-r.p.exited:
		case <-time.After(time.Second):
			return n, err
		}
		select { // let the last words on stderr arrive
		case <-r.p.errDone:
		case <-time.After(200 * time.Millisecond):
		}
		msg := "process exited"
		if r.p.waitErr != nil {
			msg = "process " + r.p.waitErr.Error()
		}
		r.p.tailMu.Lock()
		if len(r.p.tail) > 0 {
			msg += "; its stderr said: " + strings.Join(r.p.tail, " | ")
		}
		r.p.tailMu.Unlock()
		return n, fmt.Errorf("%s: %w", msg, io.EOF)
	}
	return n, err
}
