package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/ipc"
)

// deadlineMargin is how far past --timeout a one-shot command may run: an
// answer already being printed gets this long to finish, then the command
// ends with exit 4 whatever is still waiting.
const deadlineMargin = 200 * time.Millisecond

// inProcessSlack is added to deadlineMargin when primalscope runs inside
// another program (the tests' runCLI), where the streams are not the
// process's files and a cut command cannot be killed: there the backstop is
// only a guard against a hang, and the transports' own bounds are what the
// tests measure.
const inProcessSlack = 2 * time.Second

// unbounded reports the commands that run until interrupted: --timeout
// bounds each of their calls, not the command.
func unbounded(name string) bool { return name == "tail" || name == "demo" || name == "mock" }

// boundOneShot makes --timeout a hard bound on every one-shot command under
// root (call, caps, check, ls, history and its subcommands, replay...): the
// command ends within --timeout + deadlineMargin of the process start, with
// one line on stderr and exit 4 when it has not ended by then. Its context
// ends at --timeout after the start, so every wait in it shares the one
// budget. The TUI (root itself), tail, demo and any command run with --watch
// are not bounded. It wraps the RunE of the commands present when it is
// called.
func (a *app) boundOneShot(root *cobra.Command) {
	start := time.Now()
	if f := root.PersistentFlags().Lookup("timeout"); f != nil {
		f.Usage = fmt.Sprintf("how long to wait for an answer; a one-shot command (call, caps, check, ls, history...) ends within it plus %s, exit 4", deadlineMargin)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c == root || c.RunE == nil || unbounded(c.Name()) {
			return
		}
		runE := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if w := cmd.Flags().Lookup("watch"); w != nil && w.Value.String() == "true" {
				return runE(cmd, args)
			}
			if a.timeout <= 0 {
				return runE(cmd, args)
			}
			a.bounded = true
			// The command's context ends at --timeout after the start, so
			// every wait in it (parsing big params included) shares one
			// budget; the backstop ends it deadlineMargin later.
			hard := start.Add(a.timeout + deadlineMargin)
			if !a.ownsProcess() {
				hard = hard.Add(inProcessSlack)
			}
			ctx, cancel := context.WithDeadline(cmd.Context(), start.Add(a.timeout))
			defer cancel()
			cmd.SetContext(withWaitDeadline(ctx, start.Add(a.timeout+deadlineMargin/2)))
			err := a.withinDeadline(cancel, hard, func() error {
				err := runE(cmd, args)
				a.flushMemory(cmd.Context())
				return err
			})
			var te *ipc.TimeoutError
			if err != nil && ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &te) && !isQuiet(err) {
				// A bare "context deadline exceeded": say whose deadline.
				err = fmt.Errorf("timed out after %s (--timeout): %w", a.timeout, err)
			}
			return err
		}
	}
	walk(root)
}

// ownsProcess reports whether primalscope runs as its own process (main
// hands it the process's stdout and stderr), so that a cut command ends
// with the process.
func (a *app) ownsProcess() bool {
	_, out := a.io.out.(*os.File)
	_, err := a.io.err.(*os.File)
	return out && err
}

// errDeadline is the cause of a command cut at its deadline.
var errDeadline = errors.New("the command outlived --timeout")

// withinDeadline runs fn and returns what it returns, unless it is still
// running at hard: then it says so on stderr, calls cancel (fn's context)
// and the command ends with a quiet exit 4 at once, leaving fn behind.
//
// When primalscope is its own process (ownsProcess), fn runs on the
// caller's goroutine and the backstop is a timer that ends the process
// itself with exit 4 (the bounded command has nothing left to flush:
// closeMemory skips it). Running fn in a goroutine of its own cost every
// one-shot call a new goroutine whose stack grew again, copy by copy, to
// the depth of a call, and the hand-offs between it and the waiting
// caller: 9 to 37 page faults a call, measured at load 11 and at load 1.
//
// In-process (tests), fn runs in a goroutine and withinDeadline returns
// the quiet exit 4 to the caller; fn's later writes to streams that are
// not files are dropped, so they cannot race with the caller reading them.
func (a *app) withinDeadline(cancel context.CancelFunc, hard time.Time, fn func() error) error {
	errw := a.io.err
	if a.ownsProcess() {
		return a.withinDeadlineExit(cancel, hard, fn, os.Exit)
	}
	outGate, errGate := gate(a.io.out), gate(a.io.err)
	gated := *a.io // keeps what else the streams say (a test's stand-in terminal)
	gated.out, gated.err = outGate, errGate
	a.io = &gated
	done := make(chan error, 1)
	go func() { done <- fn() }()
	t := time.NewTimer(time.Until(hard))
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	select {
	case err := <-done: // it finished as the timer fired: it is not cut
		return err
	default:
	}
	cancel()
	shut(outGate)
	shut(errGate)
	fmt.Fprintf(errw, "primalscope: timed out after %s (--timeout)\n", a.timeout)
	return &quietError{code: exitTimeout, err: errDeadline}
}

// withinDeadlineExit is withinDeadline for a process of its own: fn runs
// here, and if it is still running at hard, exit ends the process with
// exit 4 after the one line on stderr. A fn that ends as the timer fires
// is not cut: whichever of the two marks the outcome first wins.
func (a *app) withinDeadlineExit(cancel context.CancelFunc, hard time.Time, fn func() error, exit func(int)) error {
	const running, finished, cut = 0, 1, 2
	var state atomic.Int32
	cutDone := make(chan struct{})
	t := time.AfterFunc(time.Until(hard), func() {
		defer close(cutDone)
		if !state.CompareAndSwap(running, cut) {
			return
		}
		cancel()
		fmt.Fprintf(a.io.err, "primalscope: timed out after %s (--timeout)\n", a.timeout)
		exit(exitTimeout)
	})
	err := fn()
	if !state.CompareAndSwap(running, finished) {
		// Cut: exit ends the process. An exit that returns (tests) leaves
		// the cut's outcome to the caller, as in-process.
		<-cutDone
		return &quietError{code: exitTimeout, err: errDeadline}
	}
	t.Stop()
	return err
}

type waitDeadlineKey struct{}

// withWaitDeadline marks ctx as a bounded command's whose waits other than
// the call itself (history, closing) must end by soft.
func withWaitDeadline(ctx context.Context, soft time.Time) context.Context {
	return context.WithValue(ctx, waitDeadlineKey{}, soft)
}

// boundWait bounds ctx by the deadline of the bounded command it belongs to,
// if any: --timeout + half of deadlineMargin after the start, which leaves
// the other half for printing and exiting. Waits that are not the call
// itself (the history) use it, so they cannot cost the user the answer.
// Values survive context.WithoutCancel, so does this bound.
func boundWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Value(waitDeadlineKey{}).(time.Time); ok {
		return context.WithDeadline(ctx, dl)
	}
	return context.WithCancel(ctx)
}

// closeConn closes conn, waiting on the peer (a WebSocket close frame) no
// longer than the command's deadline allows.
func closeConn(ctx context.Context, conn *ipc.Conn) {
	ctx, cancel := boundWait(ctx)
	defer cancel()
	conn.CloseContext(ctx)
}

// gatedWriter passes writes on until it is shut; later writes are dropped.
type gatedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed atomic.Bool
}

// gate wraps w so it can be shut. A file is returned as it is: the process
// exits right after a cut, and the commands look at the file itself (is it
// a terminal, how wide).
func gate(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &gatedWriter{w: w}
}

func shut(w io.Writer) {
	g, ok := w.(*gatedWriter)
	if !ok {
		return
	}
	g.closed.Store(true)
	// Wait for a write in progress, briefly: one stuck on a full pipe must
	// not hold the exit.
	for i := 0; i < 50; i++ {
		if g.mu.TryLock() {
			g.mu.Unlock() // any later write sees closed
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	if g.closed.Load() {
		return len(p), nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return len(p), nil
	}
	return g.w.Write(p)
}
